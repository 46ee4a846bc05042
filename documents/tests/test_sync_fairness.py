"""A source's documents queue behind people's uploads: their ingestion tasks
are at SYNCED_PRIORITY, and a worker takes a person's upload first, even one
uploaded after the sync."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.tasks import TaskResultStatus

from documents.access import COMMAND_LINE
from documents.models import Document
from documents.services.documents import create_document
from documents.services.queue import SYNCED_PRIORITY, ingestion_task_rows
from documents.tests.syncing import add_folder_source, run_worker, sync, write

pytestmark = pytest.mark.django_db


def test_a_synced_documents_ingestion_waits_behind_an_upload(
    make_channel, folder, fake_embedder, monkeypatch, django_capture_on_commit_callbacks
):
    channel = make_channel()
    for n in range(3):
        write(folder / f"note{n}.txt", f"Synced note number {n} about pumps.")
    source = add_folder_source(channel, folder)
    with django_capture_on_commit_callbacks(execute=True):
        assert sync(source).added == 3
    with django_capture_on_commit_callbacks(execute=True):
        upload = create_document(
            channel=channel,
            file=SimpleUploadedFile("person.txt", b"A person's note about valves."),
            actor=COMMAND_LINE,
        )
    priorities = {
        row.args_kwargs["args"][0]: row.priority for row in ingestion_task_rows()
    }
    synced = set(Document.objects.filter(source=source).values_list("pk", flat=True))
    assert priorities == {upload.pk: 0} | dict.fromkeys(synced, SYNCED_PRIORITY)
    assert SYNCED_PRIORITY < 0

    run_worker(monkeypatch, max_tasks=1)
    upload.refresh_from_db()
    assert upload.status == Document.Status.READY
    assert set(
        Document.objects.filter(source=source).values_list("status", flat=True)
    ) == {Document.Status.PENDING}
    assert ingestion_task_rows().filter(status=TaskResultStatus.READY).count() == 3

    run_worker(monkeypatch)
    assert set(Document.objects.values_list("status", flat=True)) == {
        Document.Status.READY
    }
