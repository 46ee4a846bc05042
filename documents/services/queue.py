"""The ingestion queue: one task per document at a time.

Documents are ingested by `documents.tasks.ingest_document_task` on the
database-backed worker (django-tasks-db). A document whose ingestion is queued
or running is not queued again, so repeated re-ingest requests cost one
ingestion, not one each. A document a source synced is queued behind people's
uploads (SYNCED_PRIORITY): a 10,000-file bucket does not make a person wait.
"""

from django.db import transaction
from django.tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from documents import locks
from documents.models import Document
from documents.tasks import ingest_document_task

INGEST_TASK_PATH = ingest_document_task.module_path
IN_FLIGHT = (TaskResultStatus.READY, TaskResultStatus.RUNNING)
# Uploads are 0 (the default); preparing answers is -10.
SYNCED_PRIORITY = -5


def ingestion_task_rows(document_ids: list[int] | None = None):
    """Task rows of ingestions that are queued or running (optionally of some
    documents)."""
    rows = DBTaskResult.objects.filter(task_path=INGEST_TASK_PATH, status__in=IN_FLIGHT)
    if document_ids is not None:
        rows = rows.filter(args_kwargs__args__0__in=document_ids)
    return rows


def enqueue_ingestion(document_id: int) -> bool:
    """Queue the document's ingestion unless one is queued or running already;
    True when a task was queued. Call it from transaction.on_commit."""
    with transaction.atomic():
        locks.xact_lock(locks.Namespace.INGESTION_QUEUE, document_id)
        if ingestion_task_rows([document_id]).exists():
            return False
        task = ingest_document_task
        if Document.objects.filter(pk=document_id, source__isnull=False).exists():
            task = task.using(priority=SYNCED_PRIORITY)
        task.enqueue(document_id)
    return True
