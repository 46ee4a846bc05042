"""Every format, text included, is bounded: a per-document deadline
(INGEST_DOCUMENT_TIMEOUT), a chunk budget (INGEST_MAX_CHUNKS) and, for zip
packages, a budget of bytes actually unpacked. Each failure says why; the
tests control time (an unboundedly slow step against a limit) instead of racing
the machine."""

import threading
import zipfile
from io import BytesIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from documents.access import COMMAND_LINE
from documents.ingestion.parsers import reader_limits
from documents.models import Document
from documents.services.documents import create_document
from documents.services.ingestion import ingest_document
from documents.tests.fixtures import docx_bomb, epub_bomb, random_words

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def _ingest(channel, name: str, data: bytes, content_type: str) -> Document:
    document = create_document(
        actor=COMMAND_LINE,
        channel=channel,
        file=SimpleUploadedFile(name, data, content_type=content_type),
        enqueue=False,
    )
    return ingest_document(document_id=document.pk)


def test_a_text_file_past_the_chunk_budget_fails_and_no_chunk_past_it_is_embedded(
    make_channel, fake_embedder, monkeypatch, settings
):
    """A large text file makes more chunks than one document may have: it fails
    saying so (and which setting), and no chunk past the budget reaches the
    embedder."""
    settings.INGEST_MAX_CHUNKS = 40
    embedded: list[str] = []
    embed = fake_embedder.embed_documents

    def recording(texts):
        embedded.extend(texts)
        return embed(texts)

    monkeypatch.setattr(fake_embedder, "embed_documents", recording)
    document = _ingest(make_channel(), "words.txt", random_words(200_000), "text/plain")
    assert document.status == Document.Status.FAILED
    assert "more than 40 passages" in document.status_reason
    assert "INGEST_MAX_CHUNKS" in document.status_reason
    assert len(embedded) <= 40
    assert document.chunks.count() == 0


def test_a_text_file_ends_at_the_document_deadline(
    make_channel, fake_embedder, monkeypatch, settings
):
    """Embedding that never finishes (an unboundedly slow embedder) ends at the
    document's deadline: the document fails with the reason, and the worker is
    free again (ingest_document returns)."""
    settings.INGEST_DOCUMENT_TIMEOUT = 2.0
    release = threading.Event()

    def never_done(texts):
        release.wait()
        return []

    monkeypatch.setattr(fake_embedder, "embed_documents", never_done)
    try:
        document = _ingest(
            make_channel(), "notes.txt", random_words(5_000), "text/plain"
        )
    finally:
        release.set()
    assert document.status == Document.Status.FAILED
    assert "longer than 2 seconds" in document.status_reason
    assert "INGEST_DOCUMENT_TIMEOUT" in document.status_reason


def test_a_docx_that_unpacks_to_900_mb_is_refused_before_it_is_read(
    make_channel, fake_embedder, settings
):
    """A DOCX of about 1 MB whose XML unpacks to 900 MB is refused at once as a
    zip bomb, with the settings that bound it, instead of holding the worker
    until the reader's time limit."""
    settings.PDF_PARSE_TIMEOUT = 600.0
    data = docx_bomb(900)
    assert len(data) < 2 * 1024 * 1024
    document = _ingest(make_channel(), "bomb.docx", data, DOCX)
    assert document.status == Document.Status.FAILED
    reason = document.status_reason
    assert "zip bomb" in reason and "UNPACKED_MIN_BUDGET_BYTES" in reason
    assert "longer than" not in reason


def test_an_epub_listing_one_chapter_400_times_is_refused_as_it_reads(
    make_channel, fake_embedder, settings
):
    """The reader counts the bytes it unpacks each time it unpacks them: a
    chapter the spine lists 400 times counts 400 times, so a small EPUB that
    would unpack 800 MB is refused with the reason, not read to the time
    limit."""
    settings.PDF_PARSE_TIMEOUT = 600.0
    settings.UNPACKED_MIN_BUDGET_BYTES = 8 * 1024 * 1024
    data = epub_bomb(chapter_kb=2048, listed=400)
    assert len(data) < 200_000
    with zipfile.ZipFile(BytesIO(data)) as archive:
        listed = sum(info.file_size for info in archive.infolist())
    assert listed < 3 * 1024 * 1024  # what counting members would have allowed
    document = _ingest(make_channel(), "bomb.epub", data, "application/epub+zip")
    assert document.status == Document.Status.FAILED
    assert "zip bomb" in document.status_reason
    assert "longer than" not in document.status_reason


def test_an_epub_chapter_with_an_internal_dtd_leaks_nothing_into_the_text(
    make_channel, fake_embedder
):
    """A chapter whose DOCTYPE declares entities ([ <!ENTITY ...> ]) reads as its
    text only: the end of the declaration ("]>") is not page text."""
    chapter = (
        b'<?xml version="1.0" encoding="utf-8"?>\n'
        b'<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.1//EN" '
        b'"http://www.w3.org/TR/xhtml11/DTD/xhtml11.dtd" [\n'
        b'  <!ENTITY nbsp "&#160;">\n  <!ENTITY odd "a ]> b">\n]>\n'
        b'<html xmlns="http://www.w3.org/1999/xhtml"><head><title>One</title>'
        b"</head><body><h1>The harbour</h1><p>Boats came in at dawn.</p>"
        b"</body></html>"
    )
    buffer = BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip")
        archive.writestr(
            "META-INF/container.xml",
            '<container xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
            '<rootfiles><rootfile full-path="book.opf"/></rootfiles></container>',
        )
        archive.writestr(
            "book.opf",
            '<package xmlns="http://www.idpf.org/2007/opf"><manifest>'
            '<item id="one" href="one.xhtml" media-type="application/xhtml+xml"/>'
            '</manifest><spine><itemref idref="one"/></spine></package>',
        )
        archive.writestr("one.xhtml", chapter)
    document = _ingest(
        make_channel(), "dtd.epub", buffer.getvalue(), "application/epub+zip"
    )
    assert document.status == Document.Status.READY, document.status_reason
    (page,) = document.pages.all()
    assert page.text == "# The harbour\n\nBoats came in at dawn."


@pytest.mark.parametrize(
    ("size", "budget"),
    [(1_000, 4_000_000), (1_000_000, 20_000_000), (10_000_000, 50_000_000)],
)
def test_the_unpacking_budget_is_a_multiple_of_the_file_with_a_floor_and_a_cap(
    settings, size, budget
):
    settings.UNPACKED_BYTES_PER_INPUT_BYTE = 20.0
    settings.UNPACKED_MIN_BUDGET_BYTES = 4_000_000
    settings.UNPACKED_MAX_BYTES = 50_000_000
    assert reader_limits(size).unpacked_budget_bytes == budget
