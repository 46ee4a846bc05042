"""manage.py ingest <channel-slug> <files or folders...> [--metadata JSON] [--queue]"""

import json
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.files import File
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from documents.ingestion.formats import SUPPORTED_EXTENSIONS
from documents.metadata import clean_metadata
from documents.models import Channel, Document
from documents.services.documents import create_document, ingest_document


class Command(BaseCommand):
    help = (
        "Add files to a channel and ingest them now (with a progress bar), or with "
        "--queue leave them to the background worker (manage.py db_worker). "
        "Folders are searched recursively for .pdf, .md and .txt files."
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
            raise CommandError("No .pdf, .md or .txt files found in the given paths.")

        rejected: list[tuple[Path, str]] = []
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
                        channel=channel_obj,
                        file=File(handle, name=path.name),
                        metadata=values,
                        enqueue=queue,
                    )
            except ValidationError as exc:
                rejected.append((path, " ".join(exc.messages)))
                continue
            if not queue:
                document = ingest_document(document_id=document.pk)
            outcomes.append((path, document))
        progress.close()
        self._summarise(channel_obj, queue, outcomes, rejected)

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
                        if found.is_file()
                        and found.suffix.lower() in SUPPORTED_EXTENSIONS
                    )
                )
            elif path.is_file():
                files.append(path)
            else:
                raise CommandError(f"{raw}: no such file or folder.")
        return files

    def _summarise(self, channel, queue, outcomes, rejected) -> None:
        failed = list(rejected)
        if queue:
            self.stdout.write(
                f"Queued {len(outcomes)} file(s) for {channel.slug}; the worker "
                "(manage.py db_worker) will ingest them."
            )
        else:
            ready = [d for _, d in outcomes if d.status == Document.Status.READY]
            failed += [(p, d.status_reason) for p, d in outcomes if d not in ready]
            without_text = sum(not d.has_text for d in ready)
            note = f" ({without_text} without extractable text)" if without_text else ""
            self.stdout.write(
                f"Ingested {len(outcomes) + len(rejected)} file(s) into "
                f"{channel.slug}: {len(ready)} ready{note}, {len(failed)} failed."
            )
        if failed:
            self.stdout.write(self.style.WARNING("Failed:"))
            for path, reason in failed:
                self.stdout.write(f"  {path}: {reason}")
