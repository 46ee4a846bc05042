"""A sync whose process died is resumed by the recovery ingestion already has
(its task queued again) or failed with the reason when no task will run it;
the schedule queues due syncs once each."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.tasks import TaskResultStatus
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from documents import locks
from documents.access import COMMAND_LINE
from documents.models import Document, Source, SourceSync
from documents.services.recovery import (
    SYNC_ORPHANED,
    fail_orphaned_syncs,
    requeue_interrupted_tasks,
)
from documents.services.sources import enqueue_due_syncs, request_sync
from documents.services.sync import run_sync
from documents.source_tasks import sync_source_task
from documents.tests.syncing import (
    add_folder_source,
    by_key,
    counts,
    run_worker,
    sync,
    write,
)

pytestmark = pytest.mark.django_db

Status = SourceSync.Status


def sync_rows(*statuses: str) -> list[DBTaskResult]:
    rows = DBTaskResult.objects.filter(task_path=sync_source_task.module_path)
    if statuses:
        rows = rows.filter(status__in=statuses)
    return list(rows.order_by("enqueued_at"))


def test_a_sync_whose_worker_died_is_resumed_without_counting_twice(
    make_channel, folder, fake_embedder, monkeypatch, django_capture_on_commit_callbacks
):
    """The state a SIGKILLed worker leaves: the sync SYNCING with two entries
    applied, its task row RUNNING, no lease held. Recovery fails the row and
    queues the sync again; the worker resumes it: the entries applied before
    are not added again, the rest is, and the counts are the sync's."""
    channel = make_channel()
    write(folder / "a.txt", "Alpha text about pumps.")
    write(folder / "b.txt", "Beta text about valves.")
    source = add_folder_source(channel, folder, delete_removed=True)
    with django_capture_on_commit_callbacks(execute=True):
        row, _ = request_sync(source=source, actor=COMMAND_LINE, trigger="admin")
    (task,) = sync_rows(TaskResultStatus.READY)
    task.claim("dead-worker")
    # What the dead worker had done: two entries applied, then killed.
    run_sync(row.pk)
    SourceSync.objects.filter(pk=row.pk).update(
        status=Status.SYNCING, finished_at=None, reason=""
    )
    write(folder / "c.txt", "Gamma text about seals.")

    with django_capture_on_commit_callbacks(execute=True):
        assert requeue_interrupted_tasks()[0] == f"sync_source_task({row.pk})"
    task.refresh_from_db()
    assert task.status == TaskResultStatus.FAILED
    run_worker(monkeypatch)

    row.refresh_from_db()
    assert row.status == Status.DONE, row.reason
    assert row.attempts == 2 and "Resumed" in row.reason
    assert counts(row) == (3, 0, 0, 0, 0), row.errors
    assert set(by_key(source)) == {"a.txt", "b.txt", "c.txt"}
    assert Document.objects.count() == 3
    assert [r.status for r in sync_rows()] == [
        TaskResultStatus.FAILED,
        TaskResultStatus.SUCCESSFUL,
    ]


def test_a_command_run_sync_left_active_is_failed_with_the_reason(make_channel, folder):
    """A sync `manage.py sync_source` ran (no task) whose process was killed
    is failed by recovery with the reason, unless someone still holds the
    source's lease; a queued one is left its grace minute to get its task."""
    channel = make_channel()
    write(folder / "a.txt", "Alpha text.")
    source = add_folder_source(channel, folder)
    row, _ = request_sync(
        source=source, actor=COMMAND_LINE, trigger="command", enqueue=False
    )
    now = row.created_at
    assert fail_orphaned_syncs(now=now + timedelta(seconds=30)) == []
    SourceSync.objects.filter(pk=row.pk).update(status=Status.SYNCING)

    held, release = threading.Event(), threading.Event()

    def running_command() -> None:
        try:
            with locks.lease(locks.Namespace.SOURCE_SYNC, source.pk):
                held.set()
                release.wait(30)
        finally:
            connection.close()

    thread = threading.Thread(target=running_command)
    thread.start()
    try:
        assert held.wait(30)
        assert fail_orphaned_syncs(now=now + timedelta(hours=1)) == []
    finally:
        release.set()
        thread.join()

    assert fail_orphaned_syncs(now=now + timedelta(seconds=30)) == [row.pk]
    row.refresh_from_db()
    assert (row.status, row.reason) == (Status.FAILED, SYNC_ORPHANED)
    # A new sync can be asked for now.
    assert sync(source).added == 1

    queued, _ = request_sync(
        source=source, actor=COMMAND_LINE, trigger="command", enqueue=False
    )
    assert fail_orphaned_syncs(now=queued.created_at + timedelta(seconds=30)) == []
    assert fail_orphaned_syncs(now=queued.created_at + timedelta(minutes=2)) == [
        queued.pk
    ]


def test_the_schedule_queues_each_due_enabled_source_once(
    make_channel, folder, django_capture_on_commit_callbacks
):
    """enqueue_due_syncs(now) queues one sync of each enabled source whose
    time has come and moves its next time on; a disabled source, one not due
    and one without a schedule get none; asking again queues nothing more."""
    channel = make_channel()
    due = add_folder_source(channel, folder, name="due", every_minutes=30)
    disabled = add_folder_source(
        channel, folder, name="disabled", every_minutes=30, enabled=False
    )
    later = add_folder_source(channel, folder, name="later", every_minutes=30)
    manual = add_folder_source(channel, folder, name="manual")
    now = timezone.now() + timedelta(hours=1)
    Source.objects.filter(pk__in=[due.pk, disabled.pk]).update(
        next_sync_at=now - timedelta(minutes=1)
    )
    Source.objects.filter(pk=later.pk).update(next_sync_at=now + timedelta(minutes=5))
    assert disabled.next_sync_at is None and manual.next_sync_at is None

    with django_capture_on_commit_callbacks(execute=True):
        queued = enqueue_due_syncs(now=now)
        again = enqueue_due_syncs(now=now)
    assert [s.source_id for s in queued] == [due.pk] and again == []
    (sync_row,) = queued
    assert (sync_row.trigger, sync_row.status) == ("schedule", Status.QUEUED)
    due.refresh_from_db()
    assert due.next_sync_at == now + timedelta(minutes=30)
    (task,) = sync_rows()
    assert task.args_kwargs["args"] == [sync_row.pk]
    assert SourceSync.objects.filter(source__in=[disabled, later, manual]).count() == 0

    # Due again while its sync still waits: no second sync, the time moves
    # (the later source is due by then, and queued).
    with django_capture_on_commit_callbacks(execute=True):
        queued = enqueue_due_syncs(now=now + timedelta(minutes=31))
    assert [s.source_id for s in queued] == [later.pk]
    due.refresh_from_db()
    assert due.next_sync_at == now + timedelta(minutes=61)
    assert SourceSync.objects.filter(source=due).count() == 1
