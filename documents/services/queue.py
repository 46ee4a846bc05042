"""The ingestion queue: one task per document at a time.

Documents are ingested by `documents.tasks.ingest_document_task` on the
database-backed worker (django-tasks-db). A document whose ingestion is queued
or running is not queued again, so repeated re-ingest requests cost one
ingestion, not one each.
"""

from django.db import connection, transaction
from django.db.models import Q
from django_tasks_db.models import DBTaskResult

INGEST_TASK_PATH = "documents.tasks.ingest_document_task"
# High bits of the advisory lock that serialises queueing a document (the
# ingestion lease in services/recovery.py uses another namespace).
QUEUE_LOCK_NAMESPACE = 0x5156 << 48
REINGESTING_REASON = (
    "Re-ingesting: the previous version stays searchable until the new one is ready."
)


def ingestion_task_rows(document_ids: list[int] | None = None):
    """Task rows of ingestions that are queued or running (optionally of some
    documents)."""
    rows = DBTaskResult.objects.filter(task_path=INGEST_TASK_PATH).filter(
        Q(status="READY") | Q(status="RUNNING")
    )
    if document_ids is not None:
        rows = rows.filter(args_kwargs__args__0__in=document_ids)
    return rows


def enqueue_ingestion(document_id: int) -> bool:
    """Queue the document's ingestion unless one is queued or running already;
    True when a task was queued. Call it from transaction.on_commit."""
    from documents.tasks import ingest_document_task

    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(%s)", [QUEUE_LOCK_NAMESPACE + document_id]
            )
        if ingestion_task_rows([document_id]).exists():
            return False
        ingest_document_task.enqueue(document_id)
    return True
