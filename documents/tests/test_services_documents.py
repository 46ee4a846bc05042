import pytest
from django.core.exceptions import ValidationError
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile

from documents.access import COMMAND_LINE
from documents.models import Channel, Chunk, Document, Page
from documents.services.documents import (
    DuplicateDocument,
    create_document,
    delete_document,
    reingest_document,
    update_document,
)
from documents.services.ingestion import ingest_document
from documents.tests.fixtures import make_pdf

pytestmark = pytest.mark.django_db

FIELDS = [
    {"name": "title", "type": "string"},
    {"name": "year", "type": "number", "required": True},
    {"name": "tags", "type": "string_list"},
]


@pytest.fixture(autouse=True)
def _small_images(settings):
    settings.PAGE_IMAGE_WIDTH = 200


def _upload(name: str, data: bytes, content_type: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type=content_type)


def _ingest(document: Document) -> Document:
    return ingest_document(document_id=document.pk)


def test_create_document_stores_a_pending_document(make_channel):
    """The file is stored, hashed and sized; the metadata is cleaned; the status is
    pending and the title falls back to the file name."""
    channel = make_channel(fields=FIELDS)
    document = create_document(
        actor=COMMAND_LINE,
        channel=channel,
        file=_upload("notes.txt", b"hello", "text/plain"),
        metadata={"year": "2024", "tags": "a, b"},
    )
    document.refresh_from_db()
    assert document.status == Document.Status.PENDING
    assert document.metadata == {"year": 2024, "tags": ["a", "b"]}
    assert document.title == "notes"
    assert document.size == 5
    assert len(document.sha256) == 64
    assert default_storage.open(document.file.name).read() == b"hello"


def test_create_document_queues_ingestion_on_commit(
    make_channel, django_capture_on_commit_callbacks
):
    """Ingestion is queued once the upload's transaction commits, not before."""
    channel = make_channel()
    with django_capture_on_commit_callbacks() as callbacks:
        create_document(
            actor=COMMAND_LINE,
            channel=channel,
            file=_upload("a.md", b"# A\n\ntext", "text/markdown"),
        )
    assert len(callbacks) == 1


def test_metadata_errors_are_all_reported(make_channel):
    """Unknown fields, bad values and missing required ones are reported together,
    and nothing is stored."""
    channel = make_channel(fields=FIELDS)
    with pytest.raises(ValidationError) as excinfo:
        create_document(
            actor=COMMAND_LINE,
            channel=channel,
            file=_upload("a.txt", b"x", "text/plain"),
            metadata={"colour": "red"},
        )
    text = " ".join(excinfo.value.messages)
    assert "Unknown field(s): colour" in text
    assert "year: a value is required" in text
    assert not Document.objects.exists()


def test_unsupported_type_is_rejected_with_a_clear_message(make_channel):
    """A file of a type Quire does not take is refused, and the message names
    what is accepted; a legacy Word file is refused by name."""
    channel = make_channel()
    with pytest.raises(ValidationError) as excinfo:
        create_document(
            actor=COMMAND_LINE,
            channel=channel,
            file=_upload("clip.mp4", b"x", "video/mp4"),
        )
    (message,) = excinfo.value.messages
    assert "clip.mp4: unsupported file type (video/mp4)" in message
    assert "PDF" in message and "Markdown" in message and "Word" in message
    with pytest.raises(ValidationError) as excinfo:
        create_document(
            actor=COMMAND_LINE,
            channel=channel,
            file=_upload("letter.doc", b"x", "application/msword"),
        )
    (message,) = excinfo.value.messages
    assert message.startswith("letter.doc: This is a Word 97-2003 document (.doc)")
    assert not Document.objects.exists()


def test_oversized_upload_is_rejected(make_channel, settings):
    """A file over UPLOAD_MAX_BYTES is refused with its size and the limit."""
    settings.UPLOAD_MAX_BYTES = 1024
    channel = make_channel()
    with pytest.raises(ValidationError) as excinfo:
        create_document(
            actor=COMMAND_LINE,
            channel=channel,
            file=_upload("big.txt", b"x" * 4096, "text/plain"),
        )
    (message,) = excinfo.value.messages
    assert "big.txt is 4.0\xa0KB; the upload limit is 1.0\xa0KB" in message


def test_plain_text_with_charset_parameter_is_ingested(make_channel, fake_embedder):
    """`text/plain; charset=UTF-8` is plain text: one ready page, chunks with
    embeddings from the configured embedder."""
    channel = make_channel()
    document = create_document(
        actor=COMMAND_LINE,
        channel=channel,
        file=_upload(
            "café.txt",
            "Crème brûlée recipe.\n\nBake it.".encode(),
            "Text/Plain; Charset=UTF-8",
        ),
        enqueue=False,
    )
    document = _ingest(document)
    assert document.status == Document.Status.READY
    assert document.page_count == 1 and document.chunk_count == 1
    page = Page.objects.get(document=document)
    assert page.text == "Crème brûlée recipe.\n\nBake it." and page.has_text
    assert not page.image
    chunk = Chunk.objects.get(document=document)
    assert chunk.embedding_model == fake_embedder.model_name
    assert chunk.channel_id == channel.pk and chunk.page_id == page.pk
    assert chunk.term_count > 0  # the keyword hooks ran


def test_markdown_pages_chunks_and_title(make_channel, fake_embedder):
    """Markdown becomes one page per top-level section; its first heading is the
    title; chunks keep their page number in reading order."""
    channel = make_channel()
    text = (
        "# Field Guide\n\nBirds.\n\n## Owls\n\nOwls hunt at night.\n\n"
        "## Gulls\n\nGulls."
    )
    document = create_document(
        actor=COMMAND_LINE,
        channel=channel,
        file=_upload("guide.md", text.encode(), "text/markdown; charset=utf-8"),
        enqueue=False,
    )
    document = _ingest(document)
    assert document.status == Document.Status.READY
    assert document.title == "Field Guide"
    chunks = list(Chunk.objects.filter(document=document).order_by("order"))
    assert [c.page_number for c in chunks] == [1, 2, 3]
    assert "Owls hunt at night." in chunks[1].text


def test_title_precedence(make_channel, fake_embedder):
    """An explicit title wins, then the metadata's title field, then the PDF's own
    title, then the file name."""
    fields = [{"name": "title", "type": "string"}]
    pdf = make_pdf(["text"], title="Title In The PDF")
    channels = iter(make_channel(f"c{n}", fields=fields) for n in range(4))

    def ingest(**kwargs):
        document = create_document(
            actor=COMMAND_LINE,
            channel=next(channels),
            file=_upload("report.pdf", pdf, "application/pdf"),
            enqueue=False,
            **kwargs,
        )
        return _ingest(document).title

    assert ingest(title="Given Title") == "Given Title"
    assert ingest(metadata={"title": "Metadata Title"}) == "Metadata Title"
    assert ingest() == "Title In The PDF"
    untitled = create_document(
        actor=COMMAND_LINE,
        channel=next(channels),
        file=_upload("plain.pdf", make_pdf(["text"]), "application/pdf"),
        enqueue=False,
    )
    assert _ingest(untitled).title == "plain"  # the file name without .pdf


def test_pdf_ingestion_stores_pages_images_and_counts(make_channel, fake_embedder):
    """A PDF ends ready with a page row and PNG per page, chunks only for pages
    with text, and the channel's corpus version bumped."""
    channel = make_channel()
    before = channel.corpus_version
    document = create_document(
        actor=COMMAND_LINE,
        channel=channel,
        file=_upload(
            "a.pdf", make_pdf(["first page", "", "third page"]), "application/pdf"
        ),
        enqueue=False,
    )
    document = _ingest(document)
    assert document.status == Document.Status.READY
    assert (document.page_count, document.chunk_count, document.has_text) == (
        3,
        2,
        True,
    )
    assert document.ingested_at is not None
    pages = list(Page.objects.filter(document=document))
    assert [p.has_text for p in pages] == [True, False, True]
    for page in pages:
        assert page.width == 200
        assert default_storage.open(page.image.name).read(4) == b"\x89PNG"
    assert [c.page_number for c in Chunk.objects.filter(document=document)] == [1, 3]
    assert Channel.objects.get(pk=channel.pk).corpus_version > before


def test_unreadable_file_fails_with_reason(make_channel, fake_embedder):
    """A file that is not a PDF ends failed with a reason, and no pages."""
    channel = make_channel()
    document = create_document(
        actor=COMMAND_LINE,
        channel=channel,
        file=_upload("fake.pdf", b"just some words", "application/pdf"),
        enqueue=False,
    )
    document = _ingest(document)
    assert document.status == Document.Status.FAILED
    assert "not a PDF" in document.status_reason
    assert not Page.objects.filter(document=document).exists()


def test_reingestion_replaces_pages_chunks_and_images(
    make_channel, fake_embedder, django_capture_on_commit_callbacks
):
    """Re-ingesting swaps in the new version and, once committed, deletes the old
    page images."""
    channel = make_channel()
    document = create_document(
        actor=COMMAND_LINE,
        channel=channel,
        file=_upload("a.pdf", make_pdf(["old one", "old two"]), "application/pdf"),
        enqueue=False,
    )
    document = _ingest(document)
    old_images = [p.image.name for p in Page.objects.filter(document=document)]
    with default_storage.open(document.file.name, "wb") as handle:
        handle.write(make_pdf(["new one"]))
    with django_capture_on_commit_callbacks(execute=True):
        document = _ingest(document)
    assert (document.status, document.page_count, document.chunk_count) == (
        "ready",
        1,
        1,
    )
    assert Chunk.objects.get(document=document).text == "new one"
    assert not any(default_storage.exists(name) for name in old_images)


def test_failed_reingestion_keeps_the_previous_version(make_channel, fake_embedder):
    """When a re-ingestion fails, the document is failed with the reason but its
    previous pages, chunks and images stay intact."""
    channel = make_channel()
    document = create_document(
        actor=COMMAND_LINE,
        channel=channel,
        file=_upload("a.pdf", make_pdf(["good text"]), "application/pdf"),
        enqueue=False,
    )
    document = _ingest(document)
    image = Page.objects.get(document=document).image.name
    with default_storage.open(document.file.name, "wb") as handle:
        handle.write(b"")
    document = _ingest(document)
    assert document.status == Document.Status.FAILED
    assert "empty" in document.status_reason
    assert Chunk.objects.get(document=document).text == "good text"
    assert default_storage.exists(image)


def test_unexpected_errors_are_logged_and_stored_briefly(
    make_channel, fake_embedder, monkeypatch, caplog
):
    """A bug in the pipeline fails the document with a short reason; the
    traceback goes to the log, not into the reason."""
    from documents.search import indexing

    def broken(channel, chunks, **options):
        raise RuntimeError("kaboom in prepare_chunks")

    monkeypatch.setattr(indexing, "prepare_chunks", broken)
    channel = make_channel()
    document = create_document(
        actor=COMMAND_LINE,
        channel=channel,
        file=_upload("a.txt", b"words", "text/plain"),
        enqueue=False,
    )
    document = _ingest(document)
    assert document.status == Document.Status.FAILED
    assert "internal error" in document.status_reason
    assert "kaboom" not in document.status_reason
    assert "kaboom in prepare_chunks" in caplog.text
    assert not Page.objects.filter(document=document).exists()


def test_embedder_failure_fails_the_document(make_channel, monkeypatch):
    """If the embedder fails, the document fails with a reason naming the step."""
    from documents.ingestion import embeddings

    class Down:
        model_name = "down"

        def embed_documents(self, texts):
            raise ConnectionError("embedding endpoint unreachable")

    monkeypatch.setattr(embeddings, "get_embedder", lambda: Down())
    channel = make_channel()
    document = create_document(
        actor=COMMAND_LINE,
        channel=channel,
        file=_upload("a.txt", b"words", "text/plain"),
        enqueue=False,
    )
    document = _ingest(document)
    assert document.status == Document.Status.FAILED
    assert "embeddings failed" in document.status_reason


def test_reingest_document_requeues(make_channel, django_capture_on_commit_callbacks):
    """reingest_document queues the document again; a failed one goes back to
    pending."""
    channel = make_channel()
    document = create_document(
        actor=COMMAND_LINE,
        channel=channel,
        file=_upload("a.txt", b"words", "text/plain"),
        enqueue=False,
    )
    Document.objects.filter(pk=document.pk).update(status="failed", status_reason="x")
    document.refresh_from_db()
    with django_capture_on_commit_callbacks() as callbacks:
        reingest_document(actor=COMMAND_LINE, document=document)
    assert len(callbacks) == 1
    document.refresh_from_db()
    assert (document.status, document.status_reason) == ("pending", "")


def test_delete_document_removes_rows_and_files(
    make_channel, fake_embedder, django_capture_on_commit_callbacks
):
    """Deleting removes the document, its pages and chunks, the original and the
    page images, and bumps the corpus version."""
    channel = make_channel()
    document = create_document(
        actor=COMMAND_LINE,
        channel=channel,
        file=_upload("a.pdf", make_pdf(["some text"]), "application/pdf"),
        enqueue=False,
    )
    document = _ingest(document)
    names = [document.file.name, Page.objects.get(document=document).image.name]
    version = Channel.objects.get(pk=channel.pk).corpus_version
    with django_capture_on_commit_callbacks(execute=True):
        delete_document(actor=COMMAND_LINE, document=document)
    assert not Document.objects.filter(pk=document.pk).exists()
    assert not Chunk.objects.filter(document_id=document.pk).exists()
    assert not any(default_storage.exists(name) for name in names)
    assert Channel.objects.get(pk=channel.pk).corpus_version > version


def test_ingesting_a_deleted_document_raises(make_channel):
    """A document that no longer exists can't be ingested."""
    with pytest.raises(Document.DoesNotExist):
        ingest_document(document_id=999_999)


def test_content_type_from_upload_is_used(make_channel):
    """Without an explicit content type, the upload's own one is checked."""
    channel = make_channel()
    document = create_document(
        actor=COMMAND_LINE,
        channel=channel,
        file=ContentFile(b"# T", name="x.md"),
        content_type="text/markdown; charset=UTF-8",
        enqueue=False,
    )
    assert document.content_type == "text/markdown; charset=utf-8"


def test_page_cap_fails_the_document_clearly(make_channel, fake_embedder, settings):
    """A PDF over settings.PDF_MAX_PAGES ends failed, naming its page count and
    the limit."""
    settings.PDF_MAX_PAGES = 2
    channel = make_channel()
    document = create_document(
        actor=COMMAND_LINE,
        channel=channel,
        file=_upload("long.pdf", make_pdf(["a", "b", "c"]), "application/pdf"),
        enqueue=False,
    )
    document = _ingest(document)
    assert document.status == Document.Status.FAILED
    assert document.status_reason == (
        "The PDF has 3 pages; the limit is 2 (setting PDF_MAX_PAGES)."
    )


def test_scanned_pdf_is_ready_without_text(make_channel, fake_embedder):
    """A PDF whose pages carry no text ends ready with its pages and images, no
    chunks, has_text False and a reason saying there is no extractable text."""
    channel = make_channel()
    document = create_document(
        actor=COMMAND_LINE,
        channel=channel,
        file=_upload("blank.pdf", make_pdf(["", ""]), "application/pdf"),
        enqueue=False,
    )
    document = _ingest(document)
    assert (document.status, document.has_text) == ("ready", False)
    assert (document.page_count, document.chunk_count) == (2, 0)
    assert document.status_reason.startswith("No extractable text")
    assert all(page.image for page in Page.objects.filter(document=document))


def test_update_document_changes_title_and_metadata_for_filters_at_once(
    make_channel,
):
    """New values are validated, stored and searchable at once; the corpus
    version moves so cached answers and schema enums follow."""
    from documents.filters import FilterError
    from documents.listing import list_documents

    channel = make_channel(
        fields=[*FIELDS[1:], {"name": "kind", "type": "string", "filterable": True}]
    )
    document = create_document(
        actor=COMMAND_LINE,
        channel=channel,
        file=_upload("notes.txt", b"hello", "text/plain"),
        metadata={"year": 2020, "kind": "draft"},
        enqueue=False,
    )
    Document.objects.filter(pk=document.pk).update(status=Document.Status.READY)
    version = Channel.objects.get(pk=channel.pk).corpus_version

    update_document(
        actor=COMMAND_LINE,
        document=document,
        title="  Final notes ",
        metadata={"year": "2024", "tags": "a, b", "kind": "final"},
    )

    document.refresh_from_db()
    assert document.title == "Final notes"
    assert document.metadata == {"year": 2024, "tags": ["a", "b"], "kind": "final"}
    assert Channel.objects.get(pk=channel.pk).corpus_version == version + 1

    def kinds(value):
        listed = list_documents(channel, metadata_filter={"kind": value})
        return [item["id"] for item in listed["results"]]

    assert kinds("final") == [document.pk]
    # The old value is no longer in use: a filter on it says which values are.
    with pytest.raises(FilterError, match="Values in use: 'final'"):
        kinds("draft")


def test_update_document_refuses_metadata_that_does_not_fit_and_keeps_the_old(
    make_channel,
):
    channel = make_channel(fields=FIELDS)
    document = create_document(
        actor=COMMAND_LINE,
        channel=channel,
        file=_upload("notes.txt", b"hello", "text/plain"),
        title="Notes",
        metadata={"year": 2020},
        enqueue=False,
    )
    version = Channel.objects.get(pk=channel.pk).corpus_version
    with pytest.raises(ValidationError) as caught:
        update_document(
            actor=COMMAND_LINE,
            document=document,
            title="Other",
            metadata={"year": "soon", "colour": "red"},
        )
    assert any("colour" in message for message in caught.value.messages)
    assert any("not a number" in message for message in caught.value.messages)
    document.refresh_from_db()
    assert (document.title, document.metadata) == ("Notes", {"year": 2020})
    assert Channel.objects.get(pk=channel.pk).corpus_version == version


def test_update_document_without_a_title_takes_the_metadata_title(make_channel):
    channel = make_channel(fields=FIELDS)
    document = create_document(
        actor=COMMAND_LINE,
        channel=channel,
        file=_upload("notes.txt", b"hello", "text/plain"),
        metadata={"year": 2020},
        enqueue=False,
    )
    update_document(
        actor=COMMAND_LINE, document=document, title="", metadata={"year": 2020}
    )
    assert document.title == "notes"
    update_document(
        actor=COMMAND_LINE,
        document=document,
        title=" ",
        metadata={"year": 2020, "title": "Annual"},
    )
    document.refresh_from_db()
    assert document.title == "Annual"


def test_a_file_already_in_the_channel_is_not_stored_again(make_channel):
    """The same bytes under another name make no second document: the upload is
    refused naming the file and the document that holds it; another channel may
    hold its own copy."""
    channel = make_channel()
    first = create_document(
        actor=COMMAND_LINE,
        channel=channel,
        file=_upload("notes.txt", b"Same words.", "text/plain"),
        enqueue=False,
    )
    with pytest.raises(DuplicateDocument) as caught:
        create_document(
            actor=COMMAND_LINE,
            channel=channel,
            file=_upload("copy of notes.txt", b"Same words.", "text/plain"),
            enqueue=False,
        )
    assert caught.value.existing == first
    assert caught.value.messages == [
        f"copy of notes.txt is already in this channel as “notes” (document "
        f"{first.pk}); it was not added again."
    ]
    assert Document.objects.filter(channel=channel).count() == 1
    elsewhere = create_document(
        actor=COMMAND_LINE,
        channel=make_channel("other"),
        file=_upload("notes.txt", b"Same words.", "text/plain"),
        enqueue=False,
    )
    assert elsewhere.sha256 == first.sha256


@pytest.mark.django_db(transaction=True)
def test_simultaneous_uploads_of_one_file_make_one_document(make_channel):
    """Two uploads of the same file at the same moment: one is stored, the other
    is refused as a duplicate (the check and the insert are serialised)."""
    import threading

    from django.db import connection

    channel = make_channel()
    barrier = threading.Barrier(4)
    outcomes: list[str] = []

    def upload(index: int) -> None:
        try:
            barrier.wait()
            create_document(
                actor=COMMAND_LINE,
                channel=channel,
                file=_upload(f"copy-{index}.txt", b"One file.", "text/plain"),
                enqueue=False,
            )
            outcomes.append("stored")
        except DuplicateDocument:
            outcomes.append("duplicate")
        finally:
            connection.close()

    threads = [threading.Thread(target=upload, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["duplicate", "duplicate", "duplicate", "stored"]
    assert Document.objects.filter(channel=channel).count() == 1


def test_reingesting_a_document_on_purpose_stays_possible(make_channel, fake_embedder):
    """A duplicate is refused at upload, but the document that holds the file can
    be read again whenever asked."""
    channel = make_channel()
    document = create_document(
        actor=COMMAND_LINE,
        channel=channel,
        file=_upload("a.md", b"# Alpha\n\nFirst words.", "text/markdown"),
        enqueue=False,
    )
    assert ingest_document(document_id=document.pk).status == Document.Status.READY
    again = ingest_document(document_id=document.pk)
    assert again.status == Document.Status.READY and again.pk == document.pk


def test_a_small_text_file_is_ingested_in_few_statements(
    make_channel, fake_embedder, django_assert_max_num_queries
):
    """A one-page text file's first ingestion, its title made up, takes at
    most 23 statements here (a round trip is a large share of a small
    document's time; the test's savepoints are 4 of them): the channel comes
    with the document's row, its metadata fields are read once for both
    decisions of the title, the old chunks' statistics and totals are one
    statement, and a first ingestion has no pages to delete."""
    channel = make_channel(fields=FIELDS)
    document = create_document(
        actor=COMMAND_LINE,
        channel=channel,
        file=_upload("notes.txt", b"Owls hunt at night.", "text/plain"),
        metadata={"year": 2024},
        enqueue=False,
    )
    with django_assert_max_num_queries(23):
        document = _ingest(document)
    assert (document.status, document.title, document.chunk_count) == (
        "ready",
        "notes",
        1,
    )
    assert Chunk.objects.get(document=document).term_count > 0
