"""manage.py reingest <channel-slug>... | --all [--queue]"""

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from documents.access import COMMAND_LINE
from documents.models import Channel, Document
from documents.services.documents import reingest_document
from documents.services.ingestion import ingest_document


class Command(BaseCommand):
    help = (
        "Read every document of the given channels (or of every channel, --all) "
        "again, for example after an upgrade of the text clean-up or OCR: now, "
        "with a progress bar, or with --queue through the background worker. A "
        "ready document stays searchable until its new version replaces it."
    )

    def add_arguments(self, parser):
        parser.add_argument("channels", nargs="*", help="Slugs of channels.")
        parser.add_argument(
            "--all", action="store_true", help="Every document of every channel."
        )
        parser.add_argument(
            "--queue",
            action="store_true",
            help="Only queue the documents for the background worker.",
        )

    def handle(self, *args, channels, all, queue, verbosity, **options):
        if all == bool(channels):
            raise CommandError("Name one or more channels, or pass --all.")
        found = (
            Channel.objects.all() if all else Channel.objects.filter(slug__in=channels)
        )
        missing = sorted(set(channels) - set(found.values_list("slug", flat=True)))
        if missing:
            raise CommandError(f"No channel with the slug(s): {', '.join(missing)}.")
        documents = list(
            Document.objects.filter(channel__in=found)
            .select_related("channel")
            .order_by("channel__slug", "pk")
        )
        if queue:
            for document in documents:
                reingest_document(actor=COMMAND_LINE, document=document)
            self.stdout.write(
                f"Queued {len(documents)} document(s) for re-ingestion; the worker "
                "(manage.py ingest_worker) will read them."
            )
            return
        outcomes: list[Document] = []
        progress = tqdm(
            documents, unit="doc", disable=verbosity == 0, file=self.stderr._out
        )
        for document in progress:
            progress.set_postfix_str(document.original_filename[-40:])
            try:
                outcomes.append(ingest_document(document_id=document.pk))
            except Document.DoesNotExist:
                continue  # deleted meanwhile
        progress.close()
        ready = [d for d in outcomes if d.status == Document.Status.READY]
        ocr = sum(d.pages.filter(ocr=True).count() for d in ready)
        self.stdout.write(
            f"Re-ingested {len(outcomes)} document(s): {len(ready)} ready, "
            f"{len(outcomes) - len(ready)} failed; {ocr} page(s) read by OCR."
        )
        for document in outcomes:
            if document.status != Document.Status.READY:
                self.stdout.write(
                    f"  {document.channel.slug}/{document.original_filename}: "
                    f"{document.status_reason}"
                )
