"""Ingestions interrupted by a dying worker: detect them and queue them again.

A worker killed mid-ingestion (SIGKILL, OOM killer, power loss) leaves its
django-tasks-db row RUNNING forever and the document `processing` (or `ready`
with the "Re-ingesting" note); the backend never retries it. While a worker
ingests a document it holds a PostgreSQL session advisory lock on the document
(`ingestion_lease`). The server drops the lock when the worker's connection
dies, so "document in flight but its lock is free" means nobody is working on it
any more; `requeue_interrupted_ingestions` queues those documents again and marks
their orphaned task rows failed.
"""

import datetime
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial

from django.db import connection, transaction
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from documents.models import Document
from documents.services.queue import (
    INGEST_TASK_PATH,
    REINGESTING_REASON,
    enqueue_ingestion,
)

logger = logging.getLogger(__name__)

# High bits of the advisory lock key, so Quire's keys can't meet another user's.
LEASE_NAMESPACE = 0x5155 << 48
# A task row is claimed a moment before its worker takes the lease.
CLAIM_GRACE = datetime.timedelta(seconds=60)
WORKER_DIED = "The worker running this task stopped (killed or crashed); requeued."


class WorkerDied(Exception):
    """Recorded on the task rows of an ingestion whose worker stopped."""


def _lease_key(document_id: int) -> int:
    return LEASE_NAMESPACE + document_id


@contextmanager
def ingestion_lease(document_id: int) -> Iterator[None]:
    """Hold the document's ingestion lease (a session advisory lock) while the
    block runs; a second ingestion of the same document waits for the first."""
    key = _lease_key(document_id)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s)", [key])
    try:
        yield
    finally:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [key])
        except Exception:
            # A lost connection has released the lock already.
            logger.warning("Could not release the ingestion lease of %s", document_id)


def lease_is_free(document_id: int) -> bool:
    """True when no process holds the document's ingestion lease right now."""
    key = _lease_key(document_id)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [key])
        (acquired,) = cursor.fetchone()
        if acquired:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [key])
    return acquired


def _running_task_rows() -> dict[int, list]:
    rows: dict[int, list] = {}
    running = DBTaskResult.objects.running().filter(task_path=INGEST_TASK_PATH)
    for row in running:
        args = (row.args_kwargs or {}).get("args") or []
        if args and isinstance(args[0], int):
            rows.setdefault(args[0], []).append(row)
    return rows


def requeue_interrupted_ingestions() -> list[int]:
    """Queue again every document whose ingestion was interrupted; return their ids.

    Candidates are documents `processing`, `ready` with the re-ingesting note,
    and documents of task rows left RUNNING; a document counts as interrupted
    when nobody holds its ingestion lease. Its orphaned task rows are marked
    failed. Safe to run at any time, from several processes at once.
    """
    now = timezone.now()
    running = _running_task_rows()
    in_flight = set(
        Document.objects.filter(status=Document.Status.PROCESSING).values_list(
            "pk", flat=True
        )
    ) | set(
        Document.objects.filter(
            status=Document.Status.READY, status_reason=REINGESTING_REASON
        ).values_list("pk", flat=True)
    )
    requeued: list[int] = []
    for document_id in sorted(in_flight | set(running)):
        with transaction.atomic():
            document = (
                Document.objects.select_for_update(skip_locked=True)
                .filter(pk=document_id)
                .first()
            )
            if document is None or not lease_is_free(document_id):
                continue
            stuck = document.status == Document.Status.PROCESSING or (
                document.status == Document.Status.READY
                and document.status_reason == REINGESTING_REASON
            )
            rows = running.get(document_id, [])
            claimed_long_ago = any(
                row.started_at and row.started_at < now - CLAIM_GRACE for row in rows
            )
            if not stuck and not (
                claimed_long_ago and document.status == Document.Status.PENDING
            ):
                continue
            if document.status == Document.Status.PROCESSING:
                document.status = Document.Status.PENDING
            # A note that no longer matches REINGESTING_REASON, so a second
            # recovery pass before the worker starts doesn't queue it twice.
            document.status_reason = (
                "Queued again: the worker ingesting it stopped."
                if document.status == Document.Status.PENDING
                else "Re-ingestion queued again: the worker ingesting it stopped; "
                "the previous version stays searchable."
            )
            document.save(update_fields=["status", "status_reason", "updated_at"])
            for row in rows:
                DBTaskResult.objects.filter(pk=row.pk, status=row.status).update(
                    status="FAILED",
                    finished_at=now,
                    exception_class_path=f"{WorkerDied.__module__}.WorkerDied",
                    traceback=WORKER_DIED,
                )
            transaction.on_commit(partial(enqueue_ingestion, document_id), robust=True)
            requeued.append(document_id)
    if requeued:
        logger.warning("Requeued interrupted ingestions: %s", requeued)
    return requeued
