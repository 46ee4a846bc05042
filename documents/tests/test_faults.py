"""Faults: storage failing on write during upload and ingestion, and ingestions
interrupted by a dead worker (recovered by documents.services.recovery).

The long fault runs (SIGKILL of a real worker, a PostgreSQL restart under load)
are scripts: benchmarks/faults/.
"""

import datetime
import os
import signal
import threading

import pytest
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import connection
from django.utils import timezone
from django_tasks_db.management.commands import db_worker
from django_tasks_db.models import DBTaskResult

from documents.access import COMMAND_LINE
from documents.management.commands import ingest_worker
from documents.models import Chunk, Document, Page
from documents.services.documents import (
    REINGESTING_REASON,
    create_document,
    ingest_document,
)
from documents.services.recovery import (
    ingestion_lease,
    lease_is_free,
    requeue_interrupted_ingestions,
)
from documents.tests.fixtures import make_pdf

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
    processing (or ready with the re-ingesting note), no lease held."""
    from documents.tasks import ingest_document_task

    ingest_document_task.enqueue(document.pk)
    row = DBTaskResult.objects.get(args_kwargs__args=[document.pk])
    row.claim("dead-worker")
    DBTaskResult.objects.filter(pk=row.pk).update(
        started_at=timezone.now() - datetime.timedelta(minutes=5)
    )
    if reingest:
        Document.objects.filter(pk=document.pk).update(
            status=Document.Status.READY, status_reason=REINGESTING_REASON
        )
    else:
        Document.objects.filter(pk=document.pk).update(
            status=Document.Status.PROCESSING
        )
    return row


def _run_ingest_worker(monkeypatch) -> list[int]:
    """`manage.py ingest_worker --batch` in this process (recovery at start);
    returns the niceness it asked for (not applied to the test process)."""
    # The worker recycles connections; inside a test's transaction that would
    # drop the data the test set up.
    monkeypatch.setattr(db_worker, "close_old_connections", lambda: None)
    monkeypatch.setattr(ingest_worker, "close_old_connections", lambda: None)
    niceness: list[int] = []
    monkeypatch.setattr(ingest_worker, "lower_priority", niceness.append)
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        call_command(
            "ingest_worker",
            batch=True,
            interval=0,
            startup_delay=False,
            reload=False,
            recovery_interval=0,
            verbosity=0,
        )
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    return niceness


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
    channel = make_channel()
    upload = SimpleUploadedFile("notes.txt", b"Tides follow the moon.\n" * 200)
    document = create_document(
        actor=COMMAND_LINE, channel=channel, file=upload, enqueue=False
    )
    if reingest:
        ingest_document(document_id=document.pk)
    orphan = _simulate_killed_worker(document, reingest=reingest)

    # The test's transaction never commits: the requeue's on_commit enqueue runs
    # when the capture ends, and a second worker run then picks the task up.
    with django_capture_on_commit_callbacks(execute=True):
        _run_ingest_worker(monkeypatch)
    # The worker steps back from the CPU (INGEST_WORKER_NICENESS, default 10).
    assert _run_ingest_worker(monkeypatch) == [10]

    orphan.refresh_from_db()
    assert orphan.status == "FAILED"
    assert "worker" in orphan.traceback
    document.refresh_from_db()
    assert document.status == Document.Status.READY
    pages = Page.objects.filter(document=document)
    chunks = Chunk.objects.filter(document=document)
    assert pages.count() == document.page_count == 1
    assert chunks.count() == document.chunk_count > 0
    orders = list(chunks.values_list("order", flat=True))
    assert len(orders) == len(set(orders))
    assert not DBTaskResult.objects.running().exists()


def test_live_ingestion_is_not_requeued(make_channel, fake_embedder):
    """While another process holds a document's ingestion lease, recovery leaves
    the document alone; once the lease is gone, it is requeued."""
    channel = make_channel()
    upload = SimpleUploadedFile("notes.txt", b"Tides follow the moon.")
    document = create_document(
        actor=COMMAND_LINE, channel=channel, file=upload, enqueue=False
    )
    Document.objects.filter(pk=document.pk).update(status=Document.Status.PROCESSING)
    held, release = threading.Event(), threading.Event()

    def other_worker():
        try:
            with ingestion_lease(document.pk):
                held.set()
                release.wait(30)
        finally:
            connection.close()

    thread = threading.Thread(target=other_worker)
    thread.start()
    try:
        assert held.wait(30)
        assert not lease_is_free(document.pk)
        assert requeue_interrupted_ingestions() == []
    finally:
        release.set()
        thread.join()
    assert lease_is_free(document.pk)
    assert requeue_interrupted_ingestions() == [document.pk]
    document.refresh_from_db()
    assert document.status == Document.Status.PENDING
    assert requeue_interrupted_ingestions() == []


def test_pdf_reader_survives_an_interrupt_meant_for_its_worker(shared_data, tmp_path):
    """An interrupt meant for the worker does not stop the reader child: it
    finishes its file instead of dying, so a graceful worker shutdown never
    marks a healthy PDF as corrupt."""
    import json
    import subprocess
    import sys
    from dataclasses import replace

    from documents.ingestion.parsers import reader_limits
    from documents.ingestion.reading import ROOT, child_request

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
