"""Every PDF in ../shared/data/pdfs reaches the end state SOURCES.md implies:
born-digital and damaged-but-readable PDFs end ready with their text, scanned
ones end ready with text read by OCR, unreadable ones fail with a reason."""

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from django.core.files import File
from django.core.files.storage import default_storage

from documents.models import Chunk, Document, Page
from documents.services.documents import create_document, ingest_document

PDFS = Path(__file__).resolve().parents[3] / "shared" / "data" / "pdfs"
# Fewer characters than this are stray glyphs (unmapped fonts), not text.
MIN_TEXT_CHARS = 10


@dataclass(frozen=True)
class Expected:
    path: str
    size: int
    pages: int | None
    text_chars: int
    image_only_pages: int
    encrypted: bool

    @property
    def has_text(self) -> bool:
        return self.text_chars >= MIN_TEXT_CHARS and self.image_only_pages < (
            self.pages or 0
        )


def _sources() -> list[Expected]:
    """The table of SOURCES.md, one row per PDF."""
    if not (PDFS / "SOURCES.md").exists():
        return []
    rows = []
    row = re.compile(
        r"^\| ([^|]+\.pdf) \| (\d+) \| ([\d-]+) \| ([\d-]+) \| ([\d-]+) \| (yes)? *\|"
    )
    for line in (PDFS / "SOURCES.md").read_text().splitlines():
        if match := row.match(line):
            path, size, pages, chars, image_only, encrypted = match.groups()
            rows.append(
                Expected(
                    path=path,
                    size=int(size),
                    pages=None if pages == "-" else int(pages),
                    text_chars=0 if chars == "-" else int(chars),
                    image_only_pages=0 if image_only == "-" else int(image_only),
                    encrypted=encrypted == "yes",
                )
            )
    return rows


SOURCES = _sources()


@pytest.fixture(autouse=True)
def _small_images(settings):
    settings.PAGE_IMAGE_WIDTH = 160


def _ingest(channel, relative: str) -> Document:
    with (PDFS / relative).open("rb") as handle:
        document = create_document(
            channel=channel,
            file=File(handle, name=Path(relative).name),
            content_type="application/pdf",
            enqueue=False,
        )
    return ingest_document(document_id=document.pk)


def test_sources_table_lists_every_pdf(shared_data):
    """The expectations below cover every PDF in the folder."""
    on_disk = {str(p.relative_to(PDFS)) for p in PDFS.glob("*/*.pdf")}
    assert on_disk == {row.path for row in SOURCES}


@pytest.mark.django_db
@pytest.mark.parametrize("expected", SOURCES, ids=lambda row: row.path)
def test_pdf_reaches_its_end_state(expected, make_channel, fake_embedder):
    """Readable PDFs (including damaged ones PDFium can open) end ready with every
    page, an image per page, line boxes on text pages and chunks for pages with
    text; scanned ones end ready with their text read by OCR (pages marked);
    unreadable ones end failed with a reason."""
    document = _ingest(make_channel(), expected.path)
    if expected.pages is None:
        assert document.status == Document.Status.FAILED
        reason = document.status_reason
        if expected.size == 0:
            assert "empty" in reason
        elif expected.encrypted:
            assert "encrypted" in reason and "password" in reason
        elif "truncated" in expected.path:
            assert "truncated" in reason
        else:
            assert "not a PDF" in reason or "corrupt" in reason
        assert not Page.objects.filter(document=document).exists()
        return

    assert document.status == Document.Status.READY, document.status_reason
    assert document.page_count == expected.pages
    pages = list(Page.objects.filter(document=document))
    assert [page.number for page in pages] == list(range(1, expected.pages + 1))
    for page in pages:
        assert page.image and default_storage.exists(page.image.name)
        assert page.width == 160 and page.height > 0
        if page.has_text:
            assert page.lines, f"page {page.number} has text but no line boxes"
            for start, end, *box in page.lines:
                assert 0 <= start < end <= len(page.text)
                assert all(0 <= value <= 1 for value in box)
                assert box[0] <= box[2] and box[1] <= box[3]
    if expected.path.startswith("scanned/"):
        assert document.has_text, document.status_reason
        ocr_pages = [page for page in pages if page.ocr]
        assert all(page.has_text for page in ocr_pages)
        # A scan whose text layer came with it (an OCR'd PDF) is not read again.
        assert len(ocr_pages) >= expected.image_only_pages - 1
    elif expected.has_text:
        assert document.has_text
    chunks = list(Chunk.objects.filter(document=document))
    assert document.chunk_count == len(chunks)
    assert [chunk.order for chunk in chunks] == list(range(len(chunks)))
    text_pages = {page.number for page in pages if page.has_text}
    assert {chunk.page_number for chunk in chunks} == text_pages
    if document.has_text:
        assert chunks
    else:
        assert not chunks
        assert "No extractable text" in document.status_reason


@pytest.mark.django_db
def test_text_pdf_with_the_real_embedder(shared_data, make_channel):
    """With the real ONNX embedder, chunks get unit vectors tagged with its name,
    and chunk text matches the page it cites."""
    from documents.ingestion import embeddings

    document = _ingest(make_channel(), "text/docling__multi_page.pdf")
    assert document.status == Document.Status.READY
    chunks = list(Chunk.objects.filter(document=document).select_related("page"))
    assert len(chunks) == document.chunk_count > 0
    model_name = embeddings.get_embedder().model_name
    for chunk in chunks:
        assert chunk.embedding_model == model_name
        assert np.linalg.norm(np.array(chunk.embedding)) == pytest.approx(1, abs=1e-3)
        assert chunk.text in chunk.page.text
