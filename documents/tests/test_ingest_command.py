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


def test_files_already_in_the_channel_are_reported_as_skipped(
    make_channel, fake_embedder, folder
):
    """Ingesting the same folder twice adds nothing the second time: the summary
    counts the files as skipped and names the documents that hold them."""
    make_channel(slug="handbook")
    _run("handbook", str(folder))
    before = Document.objects.count()
    out, _ = _run("handbook", str(folder))
    assert Document.objects.count() == before
    assert "0 ready, 0 failed, 4 skipped (already in the channel)." in out
    guide = Document.objects.get(original_filename="guide.md")
    assert f"guide.md: “Guide” (document {guide.pk})" in out


def test_folders_take_the_new_formats_and_files_known_by_content(
    make_channel, fake_embedder, tmp_path
):
    """Folder ingestion finds HTML and Office files by extension, a file without
    an extension by its content, and reports a legacy Office file by name."""
    import shutil

    from django.conf import settings

    office = settings.BASE_DIR.parent / "shared" / "data" / "office"
    if not office.exists():
        pytest.skip("../shared/data is not present")
    root = tmp_path / "mixed"
    root.mkdir()
    shutil.copy(office / "docx" / "mammoth__tables.docx", root / "tables")
    shutil.copy(office / "html" / "readability__heise.html", root / "heise.html")
    (root / "old.doc").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1")
    (root / "skip.bin").write_bytes(b"\x00\x01")
    make_channel(slug="handbook")
    out, _ = _run("handbook", str(root))
    assert "Ingested 3 file(s) into handbook: 2 ready, 1 failed." in out
    assert "old.doc: old.doc: " in out
    assert set(Document.objects.values_list("content_type", flat=True)) == {
        "text/html",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    }


def test_reingest_reads_a_channel_again(make_channel, fake_embedder, folder):
    """reingest reads every document of the channel again and reports the
    outcome; --all takes every channel; an unknown slug is an error."""
    make_channel(slug="handbook")
    make_channel(slug="other")
    _run("handbook", str(folder))
    before = dict(Document.objects.values_list("pk", "ingested_at"))
    out, _ = _run_command("reingest", "handbook")
    assert "Re-ingested 4 document(s): 3 ready, 1 failed" in out
    assert "locked.pdf: This is not a PDF file" in out
    after = dict(Document.objects.values_list("pk", "ingested_at"))
    assert all(after[pk] > before[pk] for pk in after if before[pk] is not None)
    out, _ = _run_command("reingest", "--all", "--queue")
    assert "Queued 4 document(s)" in out
    with pytest.raises(CommandError, match="No channel with the slug"):
        _run_command("reingest", "nowhere")
    with pytest.raises(CommandError, match="or pass --all"):
        _run_command("reingest")


def _run_command(*args) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()
