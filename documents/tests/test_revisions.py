"""Revisions: a document given a new file keeps its id, title and metadata;
the history, the retention of older originals, and the pages kept for
citations (documents.revisions, documents.services.revisions)."""

import threading

import pytest
from django.core.exceptions import ValidationError
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from documents import revisions
from documents.access import COMMAND_LINE, Actor
from documents.models import AuditEvent, Chunk, Document, DocumentRevision, Page
from documents.services.documents import create_document, delete_document
from documents.services.ingestion import ingest_document
from documents.services.revisions import replace_document_file
from documents.tests.fixtures import make_pdf

pytestmark = pytest.mark.django_db

FIELDS = [{"name": "year", "type": "number"}]


@pytest.fixture(autouse=True)
def _small_images(settings):
    settings.PAGE_IMAGE_WIDTH = 120


def _pdf(name: str, *pages: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, make_pdf(list(pages)), "application/pdf")


def _ready(channel, upload, **options) -> Document:
    document = create_document(
        actor=COMMAND_LINE, channel=channel, file=upload, enqueue=False, **options
    )
    return ingest_document(document_id=document.pk)


def test_a_new_document_is_revision_one(make_channel):
    """Every upload is revision 1, with its history row: who, SHA-256, size
    and the stored original."""
    channel = make_channel()
    document = create_document(
        actor=COMMAND_LINE,
        channel=channel,
        file=SimpleUploadedFile("a.txt", b"words", "text/plain"),
        enqueue=False,
    )
    (first,) = revisions.history(document)
    assert document.revision == 1 and document.revised_at is not None
    assert (first.number, first.sha256, first.size) == (1, document.sha256, 5)
    assert first.file.name == document.file.name
    assert first.actor == "command line"


def test_replacing_keeps_id_title_metadata_and_switches_on_ingestion(
    make_channel, fake_embedder, django_capture_on_commit_callbacks
):
    """The old revision stays served until the new one is ingested; then the
    same document (id, title, metadata) serves the new file, pages and chunks,
    and the old original is kept."""
    channel = make_channel(fields=FIELDS)
    document = _ready(
        channel,
        _pdf("manual.pdf", "old first page", "old second page"),
        title="The manual",
        metadata={"year": 2024},
    )
    user = Actor(via="admin")
    with django_capture_on_commit_callbacks() as callbacks:
        revision, created = replace_document_file(
            document=document,
            file=_pdf("manual-v2.pdf", "new only page"),
            actor=user,
        )
    assert created and revision.number == 2 and len(callbacks) == 1
    document.refresh_from_db()
    assert document.revision == 1 and document.page_count == 2
    assert Chunk.objects.filter(document=document).first().text.startswith("old")

    document = ingest_document(document_id=document.pk)
    document.refresh_from_db()
    assert (document.revision, document.page_count, document.status) == (2, 1, "ready")
    assert (document.title, document.metadata) == ("The manual", {"year": 2024})
    assert document.original_filename == "manual-v2.pdf"
    assert document.sha256 == revision.sha256
    assert [c.text for c in Chunk.objects.filter(document=document)] == [
        "new only page"
    ]
    old, new = DocumentRevision.objects.filter(document=document).order_by("number")
    assert default_storage.exists(old.file.name)
    assert new.served_at is not None
    audit = AuditEvent.objects.get(action=AuditEvent.Action.DOCUMENT_REVISE)
    assert audit.object_id == str(document.pk) and "revision 2" in audit.detail


def test_the_same_content_again_is_a_no_op(make_channel, fake_embedder):
    """A file whose content is already the served revision adds nothing."""
    channel = make_channel()
    document = _ready(channel, _pdf("a.pdf", "one page"))
    revision, created = replace_document_file(
        document=document, file=_pdf("renamed.pdf", "one page"), actor=COMMAND_LINE
    )
    assert not created and revision.number == 1
    assert DocumentRevision.objects.filter(document=document).count() == 1
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.DOCUMENT_REVISE)


def test_a_refused_file_changes_nothing(make_channel, fake_embedder, settings):
    """A revision is checked as an upload is (formats, size)."""
    channel = make_channel()
    document = _ready(channel, _pdf("a.pdf", "one page"))
    with pytest.raises(ValidationError, match="unsupported file type"):
        replace_document_file(
            document=document,
            file=SimpleUploadedFile("x.exe", b"MZ\x90", "application/x-msdownload"),
            actor=COMMAND_LINE,
        )
    settings.UPLOAD_MAX_BYTES = 10
    with pytest.raises(ValidationError, match="upload limit"):
        replace_document_file(
            document=document, file=_pdf("b.pdf", "another"), actor=COMMAND_LINE
        )
    assert DocumentRevision.objects.filter(document=document).count() == 1


def test_older_pages_are_kept_for_citations(make_channel, fake_embedder):
    """The served pages move to their revision when a new one is served, with
    their text, line boxes and images."""
    channel = make_channel()
    document = _ready(channel, _pdf("a.pdf", "old words here"))
    old_page = Page.objects.get(document=document)
    replace_document_file(
        document=document, file=_pdf("b.pdf", "new words"), actor=COMMAND_LINE
    )
    document = ingest_document(document_id=document.pk)
    kept = revisions.revision_page(document, 1, 1)
    assert kept.text == old_page.text and kept.lines == old_page.lines
    assert kept.image.name == old_page.image.name
    assert default_storage.exists(kept.image.name)
    assert revisions.revision_page(document, 2, 1) is None


def test_retention_drops_originals_beyond_the_kept_count(
    make_channel, fake_embedder, settings, django_capture_on_commit_callbacks
):
    """With DOCUMENT_REVISIONS_KEPT=2, a third revision drops the first
    revision's original and kept pages; its history row stays."""
    settings.DOCUMENT_REVISIONS_KEPT = 2
    channel = make_channel()
    document = _ready(channel, _pdf("a.pdf", "first"))
    first_name = document.file.name
    for number, text in ((2, "second"), (3, "third")):
        replace_document_file(
            document=document, file=_pdf(f"{text}.pdf", text), actor=COMMAND_LINE
        )
        with django_capture_on_commit_callbacks(execute=True):
            document = ingest_document(document_id=document.pk)
        assert document.revision == number
    first, second, third = DocumentRevision.objects.filter(document=document).order_by(
        "number"
    )
    assert first.file.name == "" and not default_storage.exists(first_name)
    assert revisions.revision_page(document, 1, 1) is None
    assert default_storage.exists(second.file.name)
    assert revisions.revision_page(document, 2, 1).text == "second"
    assert third.file.name == document.file.name


def test_a_file_given_during_ingestion_is_read_next(make_channel, fake_embedder):
    """Two replacements before one ingestion: the newest file is served."""
    channel = make_channel()
    document = _ready(channel, _pdf("a.pdf", "first"))
    for text in ("second", "third"):
        replace_document_file(
            document=document, file=_pdf(f"{text}.pdf", text), actor=COMMAND_LINE
        )
    document = ingest_document(document_id=document.pk)
    assert document.revision == 3
    assert Chunk.objects.get(document=document).text == "third"


@pytest.mark.django_db(transaction=True)
def test_reading_a_new_file_is_a_reingestion(make_channel, fake_embedder):
    """While a ready document's new file is read, the document is ready and
    re-ingesting, as a re-ingest makes it (recovery treats both alike); the
    switch clears it, and so does a new file that cannot be read. (Committed
    rows: the embedder reads them from its own thread's connection.)"""
    channel = make_channel()
    document = _ready(channel, _pdf("a.pdf", "first"))
    seen: list[tuple[str, bool]] = []
    embed = fake_embedder.embed_documents

    def observing(texts: list[str]) -> list[list[float]]:
        row = Document.objects.get(pk=document.pk)
        seen.append((row.status, row.reingesting))
        if threading.current_thread() is not threading.main_thread():
            connection.close()  # the embedder thread's own, so teardown can drop the db
        return embed(texts)

    fake_embedder.embed_documents = observing
    replace_document_file(
        document=document, file=_pdf("b.pdf", "second"), actor=COMMAND_LINE
    )
    document = ingest_document(document_id=document.pk)
    assert seen and set(seen) == {("ready", True)}
    assert (document.revision, document.reingesting) == (2, False)

    seen.clear()
    replace_document_file(
        document=document,
        file=SimpleUploadedFile("c.pdf", b"%PDF-1.4\ntruncated", "application/pdf"),
        actor=COMMAND_LINE,
    )
    document = ingest_document(document_id=document.pk)
    document.refresh_from_db()
    assert (document.status, document.revision) == ("ready", 2)
    assert not document.reingesting


def test_deleting_the_document_deletes_every_revision(
    make_channel, fake_embedder, django_capture_on_commit_callbacks
):
    """Deleting a document deletes all its revisions' originals and kept pages."""
    channel = make_channel()
    document = _ready(channel, _pdf("a.pdf", "first"))
    replace_document_file(
        document=document, file=_pdf("b.pdf", "second"), actor=COMMAND_LINE
    )
    document = ingest_document(document_id=document.pk)
    names = [r.file.name for r in DocumentRevision.objects.filter(document=document)]
    names.append(revisions.revision_page(document, 1, 1).image.name)
    with django_capture_on_commit_callbacks(execute=True):
        delete_document(document=document, actor=COMMAND_LINE)
    assert not any(default_storage.exists(name) for name in names)


def test_a_new_file_that_cannot_be_read_leaves_the_old_revision_served(
    make_channel, fake_embedder
):
    """A corrupt new file fails its revision, not the document: the previous
    revision stays ready and searchable, the reason says so, and giving the
    file again is a new attempt rather than a no-op."""
    channel = make_channel()
    document = _ready(channel, _pdf("a.pdf", "still served"))
    broken = b"%PDF-1.4\n1 0 obj <<>> endobj\ntruncated"
    replace_document_file(
        document=document,
        file=SimpleUploadedFile("b.pdf", broken, "application/pdf"),
        actor=COMMAND_LINE,
    )
    document = ingest_document(document_id=document.pk)
    assert (document.status, document.revision) == ("ready", 1)
    assert document.status_reason.startswith("Revision 2 (b.pdf) could not be read")
    assert Chunk.objects.get(document=document).text == "still served"
    assert DocumentRevision.objects.get(document=document, number=2).failure
    revision, created = replace_document_file(
        document=document,
        file=SimpleUploadedFile("b.pdf", broken, "application/pdf"),
        actor=COMMAND_LINE,
    )
    assert created and revision.number == 3


@pytest.mark.django_db(transaction=True)
def test_the_migration_gives_existing_documents_revision_one():
    """Documents from before revisions get revision 1 from their current file,
    dated with their upload."""
    before = [("documents", "0016_tasks_reingesting")]
    after = [("documents", "0017_revisions_document_revisions")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    channel = old.get_model("documents", "Channel").objects.create(
        slug="old", name="Old"
    )
    document = old.get_model("documents", "Document").objects.create(
        channel=channel,
        title="Manual",
        file="channels/1/originals/manual.pdf",
        original_filename="manual.pdf",
        content_type="application/pdf",
        size=123,
        sha256="ab" * 32,
    )
    try:
        executor = MigrationExecutor(connection)
        executor.migrate(after)
        new = executor.loader.project_state(after).apps
        migrated = new.get_model("documents", "Document").objects.get(pk=document.pk)
        assert (migrated.revision, migrated.revised_at) == (1, migrated.created_at)
        (first,) = new.get_model("documents", "DocumentRevision").objects.filter(
            document_id=document.pk
        )
        assert (first.number, first.file.name, first.size, first.sha256) == (
            1,
            "channels/1/originals/manual.pdf",
            123,
            "ab" * 32,
        )
    finally:
        MigrationExecutor(connection).migrate(
            MigrationExecutor(connection).loader.graph.leaf_nodes()
        )
