"""Background tasks, run by `manage.py ingest_worker` (django-tasks-db's
database worker plus recovery of tasks a stopped worker left behind)."""

import logging

from django.tasks import task

from documents.generation.vectors import prepare_document
from documents.models import Document
from documents.services.ingestion import ingest_document

logger = logging.getLogger(__name__)


@task()
def ingest_document_task(document_id: int) -> str:
    """Ingest one document; returns its final status ("ready" or "failed").

    Failures of the file itself are recorded on the document by ingest_document;
    a document deleted before or during the run is skipped.
    """
    try:
        document = ingest_document(document_id=document_id)
    except Document.DoesNotExist:
        logger.info("Document %s was deleted before ingestion finished", document_id)
        return "deleted"
    if document.status == Document.Status.READY and document.has_text:
        prepare_answers_task.enqueue(document_id)
    return document.status


# After any ingestion waiting: the document is searchable already, this only
# makes its answers quicker.
@task(priority=-10)
def prepare_answers_task(document_id: int) -> int:
    """Embed the sentences of a ready document's pages for answers (see
    documents.generation.vectors.prepare_document); returns how many. Safe to
    run again after an interruption: sentences that have a vector are skipped."""
    return prepare_document(document_id)
