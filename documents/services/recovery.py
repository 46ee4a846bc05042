"""Tasks a stopped worker left behind, of every kind: detect them and queue them
again.

A worker killed mid-task (SIGKILL, OOM killer, power loss) leaves its
django-tasks-db row RUNNING forever; the backend never retries it. So while a
worker runs a task it holds the row's lease (a session advisory lock,
`locks.Namespace.TASK`), and while it ingests a document it also holds the
document's ingestion lease. The server drops both when the worker's connection
dies, so "RUNNING but its lease is free" means nobody is working on it any more.
`requeue_interrupted_tasks` marks those rows failed (`WorkerDied`) and queues
their work again: an ingestion through the ingestion queue, with its document
put back to pending (or ready, still re-ingesting later); any other task as the
same task with the same arguments (every task is safe to run again: a source's
sync resumes). A graceful stop that cannot finish its task in time hands it
back the same way (`hand_back`). A sync left active with no task to run it (its
`manage.py sync_source` was killed) is failed with the reason
(`fail_orphaned_syncs`).
"""

import logging
from collections.abc import Iterable
from contextlib import AbstractContextManager
from datetime import timedelta
from functools import partial

from django.db import transaction
from django.tasks import TaskResultStatus
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from documents import locks
from documents.models import Document, SourceSync
from documents.services.queue import IN_FLIGHT, INGEST_TASK_PATH, enqueue_ingestion
from documents.source_tasks import sync_source_task

logger = logging.getLogger(__name__)

WORKER_DIED = "The worker running this task stopped (killed or crashed); requeued."
WORKER_STOPPED = (
    "The worker was stopped before this task finished (WORKER_STOP_TIMEOUT); requeued."
)
SYNC_ORPHANED = (
    "The process running this sync stopped before it finished, and no worker "
    "was left to resume it; entries it synced are kept. Sync again to finish."
)
# A sync queued this long ago with no task row for it lost its task.
SYNC_QUEUE_GRACE = timedelta(minutes=1)


class WorkerDied(Exception):
    """Recorded on the task rows of a task whose worker died."""


class WorkerStopped(BaseException):
    """Raised in a task its worker stops before it ends (a BaseException, so
    that a task's own `except Exception` does not record it as the task's
    failure); recorded on its row."""


def task_lease(row_id) -> AbstractContextManager[None]:
    """The lease a worker holds on a task row while it runs it."""
    return locks.lease(locks.Namespace.TASK, str(row_id))


def still_running(row: DBTaskResult) -> bool:
    """True when the row is still RUNNING: a worker that takes the lease just
    after claiming the row checks this, because recovery may have found the row
    abandoned in between."""
    return DBTaskResult.objects.filter(
        pk=row.pk, status=TaskResultStatus.RUNNING
    ).exists()


def _document_of(row: DBTaskResult) -> int | None:
    """The first argument of a task row when it is an id (a document's, or a
    sync's for a sync task)."""
    args = (row.args_kwargs or {}).get("args") or []
    return args[0] if args and isinstance(args[0], int) else None


def requeue_interrupted_tasks() -> list[str]:
    """Queue again the work of every task a dead worker left RUNNING, and of
    every document whose ingestion was interrupted; return what was requeued
    ("task_name(args)" per task, "ingest(document id)" per document).

    A row counts as abandoned when nobody holds its lease (nor, for an
    ingestion, the document's). Safe to run at any time, from several
    processes at once, but not from a worker's own task.
    """
    requeued: list[str] = []
    documents: set[int] = set()
    resuming: set[int] = set()
    for row in DBTaskResult.objects.running():
        document_id = _document_of(row)
        ingestion = row.task_path == INGEST_TASK_PATH
        with transaction.atomic():
            # Held until commit, so a worker that claimed the row a moment ago
            # waits here for its lease and then sees the row failed.
            if not locks.try_xact_lock(locks.Namespace.TASK, str(row.pk)):
                continue
            if (
                ingestion
                and document_id is not None
                and not locks.try_xact_lock(locks.Namespace.INGESTION, document_id)
            ):
                continue
            if not _fail_row(row, WorkerDied(WORKER_DIED)):
                continue
            if ingestion:
                if document_id is not None:
                    documents.add(document_id)
            else:
                transaction.on_commit(partial(_enqueue_again, row), robust=True)
                requeued.append(_described(row))
                if row.task_path == sync_source_task.module_path and document_id:
                    resuming.add(document_id)
    requeued += [
        f"ingest({document_id})"
        for document_id in requeue_interrupted_ingestions(also=documents)
    ]
    fail_orphaned_syncs(resuming=resuming)
    if requeued:
        logger.warning("Requeued interrupted tasks: %s", requeued)
    return requeued


def requeue_interrupted_ingestions(*, also: Iterable[int] = ()) -> list[int]:
    """Queue again every document whose ingestion was interrupted; return their
    ids.

    Candidates are documents `processing`, documents re-ingesting, and those of
    `also` (whose ingestion rows were just found abandoned); a document counts
    as interrupted when nobody holds its ingestion lease.
    """
    orphaned = set(also)
    candidates = (
        set(
            Document.objects.filter(status=Document.Status.PROCESSING).values_list(
                "pk", flat=True
            )
        )
        | set(Document.objects.filter(reingesting=True).values_list("pk", flat=True))
        | orphaned
    )
    return [
        document_id
        for document_id in sorted(candidates)
        if _put_back(document_id, orphaned=document_id in orphaned)
    ]


def fail_orphaned_syncs(now=None, *, resuming: Iterable[int] = ()) -> list[int]:
    """Fail every active sync nobody runs and no task will: no queued or
    running task row names it and its source's sync lease is free (a queued
    one only after SYNC_QUEUE_GRACE, the moment between its row and its task
    row). `resuming` are syncs whose task was just queued again, maybe in a
    transaction not yet committed (so no task row shows it yet). Returns
    their ids."""
    now = now or timezone.now()
    in_flight = {
        _document_of(row)
        for row in DBTaskResult.objects.filter(
            task_path=sync_source_task.module_path, status__in=IN_FLIGHT
        )
    } | set(resuming)
    failed = []
    for sync in SourceSync.objects.filter(status__in=SourceSync.ACTIVE):
        if sync.pk in in_flight:
            continue
        if sync.status == SourceSync.Status.QUEUED and (
            sync.created_at > now - SYNC_QUEUE_GRACE
        ):
            continue
        with transaction.atomic():
            if not locks.try_xact_lock(locks.Namespace.SOURCE_SYNC, sync.source_id):
                continue
            if SourceSync.objects.filter(
                pk=sync.pk, status__in=SourceSync.ACTIVE
            ).update(
                status=SourceSync.Status.FAILED, finished_at=now, reason=SYNC_ORPHANED
            ):
                failed.append(sync.pk)
    if failed:
        logger.warning("Failed orphaned syncs: %s", failed)
    return failed


def hand_back(row: DBTaskResult) -> str:
    """Queue again the work of a task its own worker gave up on (a graceful
    stop past WORKER_STOP_TIMEOUT); its row is already finished (failed with
    WorkerStopped). Returns what was requeued."""
    document_id = _document_of(row)
    if row.task_path == INGEST_TASK_PATH:
        if document_id is not None:
            _put_back(document_id, orphaned=True)
        return f"ingest({document_id})"
    with transaction.atomic():
        transaction.on_commit(partial(_enqueue_again, row), robust=True)
    return _described(row)


def _fail_row(row: DBTaskResult, error: BaseException) -> bool:
    """Mark a RUNNING row failed unless someone else finished or recovered it
    meanwhile; True when this call did."""
    return bool(
        DBTaskResult.objects.filter(pk=row.pk, status=TaskResultStatus.RUNNING).update(
            status=TaskResultStatus.FAILED,
            finished_at=timezone.now(),
            exception_class_path=f"{type(error).__module__}.{type(error).__name__}",
            traceback=str(error),
        )
    )


def _put_back(document_id: int, *, orphaned: bool) -> bool:
    """Put an interrupted ingestion's document back where a queued one is, and
    queue its ingestion when this transaction commits; False when it needs
    nothing (deleted, finished, being ingested, or locked by another
    recoverer)."""
    with transaction.atomic():
        if not locks.try_xact_lock(locks.Namespace.INGESTION, document_id):
            return False
        document = (
            Document.objects.select_for_update(skip_locked=True)
            .filter(pk=document_id)
            .first()
        )
        if document is None:
            return False
        stuck = document.status == Document.Status.PROCESSING or document.reingesting
        if not stuck and not (orphaned and document.status == Document.Status.PENDING):
            return False
        if document.status == Document.Status.PROCESSING:
            document.status = Document.Status.PENDING
        # No longer marked re-ingesting, so a second pass before the worker
        # starts doesn't queue it twice.
        document.reingesting = False
        document.status_reason = (
            "Queued again: the worker ingesting it stopped."
            if document.status == Document.Status.PENDING
            else "Re-ingestion queued again: the worker ingesting it stopped; "
            "the previous version stays searchable."
        )
        document.save(
            update_fields=["status", "status_reason", "reingesting", "updated_at"]
        )
        transaction.on_commit(partial(enqueue_ingestion, document_id), robust=True)
    return True


def _enqueue_again(row: DBTaskResult) -> None:
    arguments = row.args_kwargs or {}
    row.task.enqueue(*arguments.get("args", []), **arguments.get("kwargs", {}))


def _described(row: DBTaskResult) -> str:
    arguments = (row.args_kwargs or {}).get("args", [])
    return f"{row.task_path.rsplit('.', 1)[-1]}({', '.join(map(str, arguments))})"
