"""manage.py ingest <channel-slug> <files or folders...> [--metadata JSON] [--queue]"""

import json
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.files import File
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from documents.access import COMMAND_LINE
from documents.ingestion import formats
from documents.metadata import clean_metadata
from documents.models import Channel, Document
from documents.services.documents import DuplicateDocument, create_document
from documents.services.ingestion import ingest_document


class Command(BaseCommand):
    help = (
        "Add files to a channel and ingest them now (with a progress bar), or with "
        "--queue leave them to the background worker (manage.py ingest_worker). "
        "Folders are searched recursively for the supported types (PDF, Word, "
        "PowerPoint, Excel, HTML, EPUB, Markdown, text, PNG/JPEG/TIFF images; "
        "files without an extension by their content). A file already in the "
        "channel is skipped."
    )

    def add_arguments(self, parser):
        parser.add_argument("channel", help="Slug of the channel to add files to.")
        parser.add_argument("paths", nargs="+", help="Files or folders.")
        parser.add_argument(
            "--metadata",
            help="Metadata for every file, as a JSON object: '{\"year\": 2024}'.",
        )
        parser.add_argument(
            "--queue",
            action="store_true",
            help="Only queue the files for the background worker.",
        )

    def handle(self, *args, channel, paths, metadata, queue, verbosity, **options):
        channel_obj = Channel.objects.filter(slug=channel).first()
        if channel_obj is None:
            raise CommandError(f"There is no channel with the slug {channel!r}.")
        values = self._metadata(channel_obj, metadata)
        files = self._files(paths)
        if not files:
            raise CommandError("No files of a supported type found in the given paths.")

        rejected: list[tuple[Path, str]] = []
        skipped: list[tuple[Path, Document]] = []
        outcomes: list[tuple[Path, Document]] = []
        # tqdm redraws its line with \r; Django's OutputWrapper would add newlines.
        progress = tqdm(
            files, unit="file", disable=verbosity == 0, file=self.stderr._out
        )
        for path in progress:
            progress.set_postfix_str(path.name[-40:])
            try:
                with path.open("rb") as handle:
                    document = create_document(
                        actor=COMMAND_LINE,
                        channel=channel_obj,
                        file=File(handle, name=path.name),
                        metadata=values,
                        enqueue=queue,
                    )
            except DuplicateDocument as duplicate:
                skipped.append((path, duplicate.existing))
                continue
            except ValidationError as exc:
                rejected.append((path, " ".join(exc.messages)))
                continue
            if not queue:
                document = ingest_document(document_id=document.pk)
            outcomes.append((path, document))
        progress.close()
        self._summarise(channel_obj, queue, outcomes, rejected, skipped)

    def _metadata(self, channel: Channel, raw: str | None) -> dict:
        if not raw:
            return {}
        try:
            values = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise CommandError(f"--metadata is not valid JSON: {exc}") from None
        try:
            return clean_metadata(channel.metadata_fields.all(), values)
        except ValidationError as exc:
            raise CommandError("--metadata: " + " ".join(exc.messages)) from None

    def _files(self, paths: list[str]) -> list[Path]:
        files: list[Path] = []
        for raw in paths:
            path = Path(raw)
            if path.is_dir():
                files.extend(
                    sorted(
                        found
                        for found in path.rglob("*")
                        if found.is_file() and _wanted(found)
                    )
                )
            elif path.is_file():
                files.append(path)
            else:
                raise CommandError(f"{raw}: no such file or folder.")
        return files

    def _summarise(self, channel, queue, outcomes, rejected, skipped) -> None:
        failed = list(rejected)
        repeats = (
            f", {len(skipped)} skipped (already in the channel)" if skipped else ""
        )
        if queue:
            self.stdout.write(
                f"Queued {len(outcomes)} file(s) for {channel.slug}{repeats}; the "
                "worker (manage.py ingest_worker) will ingest them."
            )
        else:
            ready = [d for _, d in outcomes if d.status == Document.Status.READY]
            failed += [(p, d.status_reason) for p, d in outcomes if d not in ready]
            without_text = sum(not d.has_text for d in ready)
            note = f" ({without_text} without extractable text)" if without_text else ""
            total = len(outcomes) + len(rejected) + len(skipped)
            self.stdout.write(
                f"Ingested {total} file(s) into {channel.slug}: {len(ready)} "
                f"ready{note}, {len(failed)} failed{repeats}."
            )
        if skipped:
            self.stdout.write(
                "Skipped (already in the channel; reingest to read again):"
            )
            for path, document in skipped:
                self.stdout.write(
                    f"  {path}: “{document.title}” (document {document.pk})"
                )
        if failed:
            self.stdout.write(self.style.WARNING("Failed:"))
            for path, reason in failed:
                self.stdout.write(f"  {path}: {reason}")


def _wanted(path: Path) -> bool:
    """A file of a supported type (or a legacy Office one, to say why it is
    refused); a file without an extension if its content is recognised."""
    suffix = path.suffix.lower()
    if suffix:
        return suffix in formats.SUPPORTED_EXTENSIONS or suffix in (
            formats.LEGACY_EXTENSIONS
        )
    try:
        with path.open("rb") as handle:
            return formats.resolve_content_type(None, path.name, handle) is not None
    except formats.Refused:
        return True
    except OSError:
        return False
