"""Faults: storage failing on write during upload and ingestion, and tasks of
every kind interrupted by a dead or stopped worker (recovered by
documents.services.recovery, handed back by documents.worker).

The long fault runs (SIGKILL of a real worker, a PostgreSQL restart under load)
are scripts: benchmarks/faults/.
"""

import datetime
import os
import signal
import threading
import time

import pytest
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.tasks import TaskResultStatus
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from documents import locks, tasks
from documents.access import COMMAND_LINE
from documents.management.commands import ingest_worker
from documents.models import Chunk, Document, Page, SentenceVector
from documents.services import ingestion
from documents.services.documents import create_document
from documents.services.ingestion import ingest_document
from documents.services.recovery import (
    requeue_interrupted_ingestions,
    requeue_interrupted_tasks,
    task_lease,
)
from documents.tests.fixtures import make_pdf
from documents.tests.syncing import run_worker
from documents.worker import LeasedWorker

pytestmark = pytest.mark.django_db

PAGES = ["Alpha page about tides.", "Beta page about moons.", "Gamma page."]


def _files(root) -> list[str]:
    return sorted(
        os.path.relpath(os.path.join(folder, name), root)
        for folder, _, names in os.walk(root)
        for name in names
    )


@pytest.fixture
def failing_storage(settings, tmp_path):
    """Returns configure(fail_on, partial_bytes): the default storage then runs
    out of disk when writing names containing `fail_on`."""
    root = tmp_path / "failing-media"

    def configure(fail_on: str, partial_bytes: int = 0):
        settings.STORAGES = {
            **settings.STORAGES,
            "default": {
                "BACKEND": "documents.tests.failing_storage.FailingStorage",
                "OPTIONS": {
                    "location": root,
                    "fail_on": fail_on,
                    "partial_bytes": partial_bytes,
                },
            },
        }
        return root

    return configure


def _pdf_upload() -> SimpleUploadedFile:
    return SimpleUploadedFile(
        "tides.pdf", make_pdf(PAGES), content_type="application/pdf"
    )


def test_storage_failing_during_upload_refuses_it_and_keeps_nothing(
    make_channel, failing_storage
):
    """When the original can't be written (disk full after a few bytes), the
    upload is refused with a message a person understands, no document row is
    created and no partial file stays on disk."""
    root = failing_storage("/originals/", partial_bytes=100)
    channel = make_channel()
    with pytest.raises(ValidationError) as caught:
        create_document(
            actor=COMMAND_LINE, channel=channel, file=_pdf_upload(), enqueue=False
        )
    (message,) = caught.value.messages
    assert "tides.pdf could not be stored" in message
    assert "No space left on device" in message
    assert not Document.objects.filter(channel=channel).exists()
    assert _files(root) == []


def test_storage_failing_during_ingestion_fails_the_document_cleanly(
    make_channel, failing_storage, fake_embedder, settings
):
    """When page images can't be written during ingestion, the document ends
    failed with a reason, has no pages or chunks, and only its original stays
    in storage (no page image, whole or partial)."""
    settings.PAGE_IMAGE_WIDTH = 200
    root = failing_storage("/pages/", partial_bytes=100)
    channel = make_channel()
    document = create_document(
        actor=COMMAND_LINE, channel=channel, file=_pdf_upload(), enqueue=False
    )
    document = ingest_document(document_id=document.pk)
    assert document.status == Document.Status.FAILED
    assert "Ingestion failed" in document.status_reason
    assert Page.objects.filter(document=document).count() == 0
    assert Chunk.objects.filter(document=document).count() == 0
    assert _files(root) == [document.file.name]


def _simulate_killed_worker(document: Document, *, reingest: bool) -> DBTaskResult:
    """The state a SIGKILLed worker leaves: its task row RUNNING, the document
    processing (or ready and re-ingesting), no lease held."""
    tasks.ingest_document_task.enqueue(document.pk)
    row = DBTaskResult.objects.get(args_kwargs__args=[document.pk])
    row.claim("dead-worker")
    if reingest:
        Document.objects.filter(pk=document.pk).update(reingesting=True)
    else:
        Document.objects.filter(pk=document.pk).update(
            status=Document.Status.PROCESSING
        )
    return row


def _rows(task, *statuses) -> list[DBTaskResult]:
    rows = DBTaskResult.objects.filter(task_path=task.module_path)
    if statuses:
        rows = rows.filter(status__in=statuses)
    return list(rows.order_by("enqueued_at"))


def _text_document(channel, *, ingested: bool) -> Document:
    upload = SimpleUploadedFile("notes.txt", b"Tides follow the moon.\n" * 200)
    document = create_document(
        actor=COMMAND_LINE, channel=channel, file=upload, enqueue=False
    )
    return ingest_document(document_id=document.pk) if ingested else document


@pytest.mark.parametrize("reingest", [False, True])
def test_ingestion_left_by_a_killed_worker_is_requeued_and_completes(
    make_channel,
    fake_embedder,
    monkeypatch,
    django_capture_on_commit_callbacks,
    reingest,
):
    """A document whose worker died mid-ingestion is queued again when a worker
    starts (its orphaned task row marked failed), and ends ready with exactly
    one copy of its pages and chunks."""
    document = _text_document(make_channel(), ingested=reingest)
    orphan = _simulate_killed_worker(document, reingest=reingest)

    # The test's transaction never commits: the requeue's on_commit enqueue runs
    # when the capture ends, and a second worker run then picks the task up.
    with django_capture_on_commit_callbacks(execute=True):
        run_worker(monkeypatch)
    # The worker steps back from the CPU (INGEST_WORKER_NICENESS, default 10).
    assert run_worker(monkeypatch) == [10]

    orphan.refresh_from_db()
    assert orphan.status == TaskResultStatus.FAILED
    assert orphan.exception_class_path.endswith("WorkerDied")
    assert "worker" in orphan.traceback
    document.refresh_from_db()
    assert document.status == Document.Status.READY
    assert not document.reingesting
    pages = Page.objects.filter(document=document)
    chunks = Chunk.objects.filter(document=document)
    assert pages.count() == document.page_count == 1
    assert chunks.count() == document.chunk_count > 0
    orders = list(chunks.values_list("order", flat=True))
    assert len(orders) == len(set(orders))
    assert not DBTaskResult.objects.running().exists()


def test_answers_preparation_left_by_a_killed_worker_is_requeued_and_completes(
    make_channel, fake_embedder, monkeypatch, django_capture_on_commit_callbacks
):
    """A prepare_answers_task whose worker died (row RUNNING, no lease) is
    marked failed and queued again with the same document when a worker
    starts; the new run embeds the sentences and nothing stays RUNNING."""
    document = _text_document(make_channel(), ingested=True)
    orphan = tasks.prepare_answers_task.enqueue(document.pk)
    DBTaskResult.objects.get(pk=orphan.id).claim("dead-worker")

    with django_capture_on_commit_callbacks(execute=True):
        run_worker(monkeypatch)
    run_worker(monkeypatch)

    first, again = _rows(tasks.prepare_answers_task)
    assert first.status == TaskResultStatus.FAILED
    assert first.exception_class_path.endswith("WorkerDied")
    assert again.status == TaskResultStatus.SUCCESSFUL
    assert again.args_kwargs["args"] == [document.pk]
    assert again.return_value > 0
    assert SentenceVector.objects.filter(page__document=document).count() > 0
    assert not DBTaskResult.objects.running().exists()


def _hold_in_other_connection(lease):
    """Hold `lease` in a thread with its own connection (another worker);
    returns release()."""
    held, release = threading.Event(), threading.Event()

    def other_worker():
        try:
            with lease:
                held.set()
                release.wait(30)
        finally:
            connection.close()

    thread = threading.Thread(target=other_worker)
    thread.start()
    assert held.wait(30)

    def stop():
        release.set()
        thread.join()

    return stop


@pytest.mark.parametrize("kind", ["ingest_document_task", "prepare_answers_task"])
def test_a_running_task_whose_lease_is_held_is_left_alone(make_channel, kind):
    """While another worker holds a RUNNING row's lease, recovery leaves it
    alone, however long ago it started; once the lease is gone, it is failed
    and its work queued again."""
    document = _text_document(make_channel(), ingested=False)
    result = getattr(tasks, kind).enqueue(document.pk)
    row = DBTaskResult.objects.get(pk=result.id)
    row.claim("busy-worker")
    DBTaskResult.objects.filter(pk=row.pk).update(
        started_at=timezone.now() - datetime.timedelta(days=1)
    )
    release = _hold_in_other_connection(task_lease(row.pk))
    try:
        assert requeue_interrupted_tasks() == []
    finally:
        release()
    row.refresh_from_db()
    assert row.status == TaskResultStatus.RUNNING
    assert requeue_interrupted_tasks() == [
        f"ingest({document.pk})"
        if kind == "ingest_document_task"
        else f"prepare_answers_task({document.pk})"
    ]
    row.refresh_from_db()
    assert row.status == TaskResultStatus.FAILED
    assert requeue_interrupted_tasks() == []


def test_a_row_recovered_between_claim_and_lease_is_not_run(
    make_channel, fake_embedder
):
    """A worker that takes a row's lease only after recovery judged the row
    abandoned (the moment between claim and lease) does not run it: the
    requeued copy runs instead, once."""
    document = _text_document(make_channel(), ingested=True)
    result = tasks.prepare_answers_task.enqueue(document.pk)
    row = DBTaskResult.objects.get(pk=result.id)
    row.claim("slow-worker")
    assert requeue_interrupted_tasks() == [f"prepare_answers_task({document.pk})"]
    worker = LeasedWorker(
        stop_timeout=1.0,
        queue_names=["default"],
        excluded_queue_names=[],
        interval=0,
        batch=True,
        backend_name="default",
        startup_delay=False,
        max_tasks=None,
        worker_id="slow-worker",
    )
    worker.run_task(row)
    row.refresh_from_db()
    assert row.status == TaskResultStatus.FAILED
    assert not SentenceVector.objects.filter(page__document=document).exists()


def test_live_ingestion_is_not_requeued(make_channel, fake_embedder):
    """While another process holds a document's ingestion lease, recovery leaves
    the document alone; once the lease is gone, it is requeued."""
    document = _text_document(make_channel(), ingested=False)
    Document.objects.filter(pk=document.pk).update(status=Document.Status.PROCESSING)
    release = _hold_in_other_connection(
        locks.lease(locks.Namespace.INGESTION, document.pk)
    )
    try:
        assert requeue_interrupted_ingestions() == []
    finally:
        release()
    assert requeue_interrupted_ingestions() == [document.pk]
    document.refresh_from_db()
    assert document.status == Document.Status.PENDING
    assert requeue_interrupted_ingestions() == []


def _stop_worker_then(finish: bool):
    """A task body that stops its own worker (SIGTERM, as `kill` or systemd
    would), then returns at once (`finish`) or never on its own."""

    def body(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)
        if finish:
            return 0
        # Unboundedly slow next to any stop timeout: only the worker ends it.
        time.sleep(600)
        raise AssertionError("the worker did not interrupt its task")

    return body


@pytest.mark.parametrize("kind", ["ingest_document_task", "prepare_answers_task"])
def test_a_stopped_worker_hands_back_a_task_it_cannot_finish_in_time(
    make_channel,
    fake_embedder,
    monkeypatch,
    settings,
    django_capture_on_commit_callbacks,
    kind,
):
    """SIGTERM during a task that does not end: after WORKER_STOP_TIMEOUT the
    worker interrupts it, records the row failed (WorkerStopped), queues the
    same work again and exits; a re-ingested document is put back as it was
    (ready, its previous version searchable, no longer re-ingesting)."""
    settings.WORKER_STOP_TIMEOUT = 0.05
    document = _text_document(make_channel(), ingested=True)
    target = (
        (ingestion, "parse_file")
        if kind == "ingest_document_task"
        else (
            tasks,
            "prepare_document",
        )
    )
    monkeypatch.setattr(*target, _stop_worker_then(finish=False))
    task = getattr(tasks, kind)
    task.enqueue(document.pk)

    with django_capture_on_commit_callbacks(execute=True):
        run_worker(monkeypatch)

    stopped, again = _rows(task)
    assert stopped.status == TaskResultStatus.FAILED
    assert stopped.exception_class_path.endswith("WorkerStopped")
    assert again.status == TaskResultStatus.READY
    assert again.args_kwargs["args"] == [document.pk]
    assert not DBTaskResult.objects.running().exists()
    document.refresh_from_db()
    assert document.status == Document.Status.READY
    assert not document.reingesting
    assert Chunk.objects.filter(document=document).count() == document.chunk_count


def test_a_stopped_worker_lets_a_task_finish_within_the_bound(
    make_channel, fake_embedder, monkeypatch, settings
):
    """SIGTERM during a task that ends before WORKER_STOP_TIMEOUT: the task
    finishes and is recorded successful, nothing is queued again, and the
    worker takes no further task."""
    settings.WORKER_STOP_TIMEOUT = 600
    document = _text_document(make_channel(), ingested=True)
    monkeypatch.setattr(tasks, "prepare_document", _stop_worker_then(finish=True))
    tasks.prepare_answers_task.enqueue(document.pk)
    tasks.prepare_answers_task.enqueue(document.pk)

    run_worker(monkeypatch)

    first, second = _rows(tasks.prepare_answers_task)
    assert first.status == TaskResultStatus.SUCCESSFUL
    assert second.status == TaskResultStatus.READY


def test_an_interrupted_upload_ingestion_goes_back_to_pending(
    make_channel,
    fake_embedder,
    monkeypatch,
    settings,
    django_capture_on_commit_callbacks,
):
    """A first ingestion handed back by a stopped worker leaves its document
    pending with a note, and the queued copy ingests it."""
    settings.WORKER_STOP_TIMEOUT = 0
    document = _text_document(make_channel(), ingested=False)
    with monkeypatch.context() as patch:
        patch.setattr(ingestion, "parse_file", _stop_worker_then(finish=False))
        tasks.ingest_document_task.enqueue(document.pk)
        with django_capture_on_commit_callbacks(execute=True):
            run_worker(monkeypatch)
    document.refresh_from_db()
    assert document.status == Document.Status.PENDING
    assert "stopped" in document.status_reason
    run_worker(monkeypatch)
    document.refresh_from_db()
    assert document.status == Document.Status.READY
    assert not DBTaskResult.objects.running().exists()


def test_pdf_reader_survives_an_interrupt_meant_for_its_worker(shared_data, tmp_path):
    """An interrupt meant for the worker does not stop the reader child: it
    finishes its file instead of dying, so a graceful worker shutdown never
    marks a healthy PDF as corrupt."""
    import json
    import subprocess
    import sys
    from dataclasses import replace

    from documents.ingestion.parsers import reader_limits
    from documents.ingestion.reader_child import ROOT
    from documents.ingestion.reading import child_request

    book = (
        shared_data
        / "pdfs/misc"
        / ("pypdf-sample__009-pdflatex-geotopo_GeoTopo-komprimiert.pdf")
    )
    limits = replace(reader_limits(book.stat().st_size), image_width=600, memory_mb=0)
    request = child_request(book, "application/pdf", work_dir=tmp_path, limits=limits)
    reader = subprocess.Popen(
        [sys.executable, "-m", "documents.ingestion.reader", json.dumps(request)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
    )
    # Interrupted once it is reading, whatever the machine's speed.
    first = [reader.stdout.readline(), reader.stdout.readline()]
    reader.send_signal(signal.SIGINT)
    rest, _ = reader.communicate(timeout=300)
    output = b"".join(first) + rest
    assert reader.returncode == 0
    messages = [json.loads(line) for line in output.splitlines()]
    assert messages[0]["page_count"] == 117
    assert [m["number"] for m in messages if m["kind"] == "page"] == list(range(1, 118))
    assert messages[-1]["kind"] == "end"


def test_lower_priority_raises_the_nice_value_or_leaves_it(monkeypatch):
    calls = []
    monkeypatch.setattr(ingest_worker.os, "nice", calls.append)
    ingest_worker.lower_priority(10)
    ingest_worker.lower_priority(0)
    assert calls == [10]
