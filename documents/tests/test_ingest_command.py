from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django_tasks_db.models import DBTaskResult

from documents.models import Document
from documents.tests.fixtures import make_pdf

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _small_images(settings):
    settings.PAGE_IMAGE_WIDTH = 120


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "inbox"
    (root / "sub").mkdir(parents=True)
    (root / "guide.md").write_text("# Guide\n\nHow to use the thing.")
    (root / "sub" / "notes.txt").write_text("Some plain notes.")
    (root / "sub" / "paper.pdf").write_bytes(make_pdf(["A page of text."]))
    (root / "sub" / "locked.pdf").write_bytes(b"not really a pdf")
    (root / "archive.zip").write_bytes(b"PK\x05\x06" + b"\x00" * 18)
    return root


def _run(*args) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("ingest", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_ingests_a_folder_and_summarises(make_channel, fake_embedder, folder):
    """Supported files in the folder tree are ingested now; the summary counts
    ready and failed files and says why each failure happened."""
    make_channel(slug="handbook", fields=[{"name": "year", "type": "number"}])
    out, err = _run("handbook", str(folder), "--metadata", '{"year": "2024"}')
    assert "Ingested 4 file(s) into handbook: 3 ready, 1 failed." in out
    assert "locked.pdf: This is not a PDF file" in out
    assert "100%" in err  # the progress bar
    statuses = dict(Document.objects.values_list("original_filename", "status"))
    assert statuses == {
        "guide.md": "ready",
        "notes.txt": "ready",
        "paper.pdf": "ready",
        "locked.pdf": "failed",
    }
    assert {d.metadata["year"] for d in Document.objects.all()} == {2024}


def test_explicit_unsupported_file_is_reported(make_channel, fake_embedder, folder):
    """A file named explicitly with an unsupported type is listed as failed with
    the upload's message."""
    make_channel(slug="handbook")
    out, _ = _run("handbook", str(folder / "archive.zip"), str(folder / "guide.md"))
    assert "2 file(s) into handbook: 1 ready, 1 failed." in out
    assert "archive.zip: archive.zip: unsupported file type" in out


def test_queue_only_queues(make_channel, folder, django_capture_on_commit_callbacks):
    """With --queue, documents stay pending and one task per file is queued."""
    make_channel(slug="handbook")
    with django_capture_on_commit_callbacks(execute=True):
        out, _ = _run("handbook", str(folder), "--queue")
    assert "Queued 4 file(s) for handbook" in out
    assert set(Document.objects.values_list("status", flat=True)) == {"pending"}
    assert DBTaskResult.objects.count() == 4


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nowhere", "x"], "There is no channel with the slug 'nowhere'"),
        (["handbook", "/no/such/path"], "no such file or folder"),
        (["handbook", ".", "--metadata", "{oops"], "--metadata is not valid JSON"),
        (["handbook", ".", "--metadata", '{"colour": 1}'], "Unknown field(s): colour"),
    ],
)
def test_bad_arguments_stop_before_any_work(make_channel, args, message):
    """Unknown channels, missing paths and bad metadata are errors up front."""
    make_channel(slug="handbook")
    with pytest.raises(
        CommandError, match=message.replace("(", r"\(").replace(")", r"\)")
    ):
        _run(*args)
    assert not Document.objects.exists()
