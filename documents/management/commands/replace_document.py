"""manage.py replace_document <channel-slug> <document-id> <path> [--queue]"""

from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.files import File
from django.core.management.base import BaseCommand, CommandError

from documents.access import COMMAND_LINE
from documents.models import Channel, Document
from documents.services.ingestion import ingest_document
from documents.services.revisions import replace_document_file


class Command(BaseCommand):
    help = (
        "Give a document a new file (its next revision), keeping its id, title, "
        "metadata and links; the file is read now, or with --queue by the "
        "background worker. The previous revision stays searchable until then. "
        "A file with the content of the current revision changes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("channel", help="The channel's slug.")
        parser.add_argument("document_id", type=int, help="The document's id.")
        parser.add_argument("path", type=Path, help="The new file.")
        parser.add_argument(
            "--queue",
            action="store_true",
            help="Only queue the ingestion for the background worker.",
        )

    def handle(self, *args, channel, document_id, path, queue, **options):
        found = Channel.objects.filter(slug=channel).first()
        if found is None:
            raise CommandError(f"No channel with the slug {channel!r}.")
        document = Document.objects.for_channel(found).filter(pk=document_id).first()
        if document is None:
            raise CommandError(f"Channel {channel!r} has no document {document_id}.")
        if not path.is_file():
            raise CommandError(f"{path} is not a file.")
        with path.open("rb") as handle:
            try:
                revision, created = replace_document_file(
                    document=document,
                    file=File(handle, name=path.name),
                    actor=COMMAND_LINE,
                    enqueue=queue,
                )
            except ValidationError as exc:
                raise CommandError(" ".join(exc.messages)) from None
        if not created:
            self.stdout.write(
                f"Unchanged: {path.name} is already revision {revision.number} of "
                f"document {document.pk}."
            )
            return
        if queue:
            self.stdout.write(
                f"Queued revision {revision.number} of document {document.pk}; the "
                "worker (manage.py ingest_worker) will read it."
            )
            return
        document = ingest_document(document_id=document.pk)
        outcome = document.status
        if document.status_reason and document.status != Document.Status.READY:
            outcome += f": {document.status_reason}"
        self.stdout.write(
            f"Document {document.pk} is at revision {document.revision} ({outcome})."
        )
