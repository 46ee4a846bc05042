"""Re-ingestion under a concurrent reader, and ingestion by the background worker.

These tests commit for real (transactional_db): a second connection only sees
committed data, and the worker only picks up tasks queued on commit.
"""

import signal
import threading
import time

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.management import call_command
from django.db import connection
from django.db.models import Count
from django.tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from documents.access import COMMAND_LINE
from documents.models import Chunk, Document
from documents.search import indexing
from documents.services.documents import create_document
from documents.services.ingestion import ingest_document
from documents.tests.fixtures import make_pdf

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _small_images(settings):
    settings.PAGE_IMAGE_WIDTH = 120


def _pdf(pages: int, word: str) -> bytes:
    return make_pdf([f"{word} text on page {n}" for n in range(1, pages + 1)])


def test_reingestion_is_atomic_for_a_concurrent_reader(
    make_channel, fake_embedder, monkeypatch
):
    """While a document is re-ingested, another connection counting its chunks
    (and the pages they sit on) sees the old counts or the new ones, never a mix,
    even though the replacement transaction pauses between deleting and
    inserting."""
    channel = make_channel()
    document = create_document(
        actor=COMMAND_LINE,
        channel=channel,
        file=ContentFile(_pdf(12, "old"), name="doc.pdf"),
        content_type="application/pdf",
        enqueue=False,
    )
    ingest_document(document_id=document.pk)
    with default_storage.open(document.file.name, "wb") as handle:
        handle.write(_pdf(5, "new"))

    original_prepare = indexing.prepare_chunks
    seen: list[tuple[int, int]] = []
    stop = threading.Event()

    def wait_for_reads(count: int) -> None:
        """Until the reader has counted `count` more times (not a duration, so
        a busy machine only makes it slower)."""
        target = len(seen) + count
        while len(seen) < target and reader.is_alive():
            time.sleep(0.005)

    def slow_prepare(channel, chunks, **options):
        wait_for_reads(25)  # old rows deleted, new pages inserted, not committed
        original_prepare(channel, chunks, **options)

    monkeypatch.setattr(indexing, "prepare_chunks", slow_prepare)

    def read() -> None:
        try:
            while not stop.is_set():
                # One statement, so one snapshot: pages (via their chunks) and
                # chunks must belong to the same version.
                counts = Chunk.objects.filter(document_id=document.pk).aggregate(
                    pages=Count("page_id", distinct=True), chunks=Count("id")
                )
                seen.append((counts["pages"], counts["chunks"]))
                time.sleep(0.005)
        finally:
            connection.close()

    reader = threading.Thread(target=read)
    reader.start()
    try:
        wait_for_reads(1)
        result = ingest_document(document_id=document.pk)
        wait_for_reads(2)  # the second began after the commit
    finally:
        stop.set()
        reader.join()

    assert result.status == Document.Status.READY
    assert (result.page_count, result.chunk_count) == (5, 5)
    assert set(seen) == {(12, 12), (5, 5)}
    assert len(seen) > 20  # the reader really ran through the replacement
    assert set(
        Chunk.objects.filter(document=document).values_list("text", flat=True)
    ) == {f"new text on page {n}" for n in range(1, 6)}


def test_worker_ingests_a_queued_document(make_channel, fake_embedder):
    """create_document queues a task on commit; `manage.py db_worker --batch` runs
    it and the document ends ready."""
    channel = make_channel()
    document = create_document(
        actor=COMMAND_LINE,
        channel=channel,
        file=ContentFile(b"# Notes\n\nQueued for the worker.", name="notes.md"),
        content_type="text/markdown",
    )
    document.refresh_from_db()
    assert document.status == Document.Status.PENDING
    task = DBTaskResult.objects.get()
    assert task.args_kwargs["args"] == [document.pk]

    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        call_command(
            "db_worker", batch=True, startup_delay=False, reload=False, verbosity=0
        )
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)

    document.refresh_from_db()
    assert document.status == Document.Status.READY, document.status_reason
    assert document.title == "Notes"
    assert document.chunk_count == 1
    task.refresh_from_db()
    assert task.status == TaskResultStatus.SUCCESSFUL
    assert task.return_value == "ready"
