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

from documents.access import COMMAND_LINE
from documents.models import Chunk, Document, Page
from documents.services.documents import create_document
from documents.services.ingestion import ingest_document

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
            actor=COMMAND_LINE,
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
            for line in page.lines:
                start, end, *box = line[:6]  # a heading's seventh: its level
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


@pytest.mark.django_db
def test_a_word_hyphenated_across_lines_is_found_on_its_page(
    shared_data, make_channel, fake_embedder
):
    """PDFium breaks "understudied" across two lines of the first page of a
    paper ("understud-" / "ied"); the stored text joins it, so a keyword query
    for the word finds that page first, among other papers. A compound broken at
    its own hyphen keeps it ("knowledge-generating")."""
    from documents.search.service import retrieve_chunks

    channel = make_channel(retriever_mode="keyword")
    paper = _ingest(channel, "text/papermage__2304.02623v1.pdf")
    for other in (
        "text/papermage__2020.acl-main.447.pdf",
        "text/docling__multi_page.pdf",
    ):
        _ingest(channel, other)
    first_page = Page.objects.get(document=paper, number=1)
    assert "understudied" in first_page.text and "understud-" not in first_page.text
    third_page = Page.objects.get(document=paper, number=3)
    assert "knowledge-generating" in third_page.text
    (best, *_) = retrieve_chunks(channel, "understudied")
    assert (best.document_id, best.page_number) == (paper.pk, 1)


@pytest.mark.django_db
def test_line_boxes_match_pdfiums_own_boxes(shared_data, make_channel, fake_embedder):
    """The stored line that holds a known sentence points at that sentence in
    the page text, and its box is where PDFium's own text rectangles put those
    characters (fractions of the page, origin top left)."""
    import pypdfium2 as pdfium

    sentence = "Patented in 1868 by Christopher Latham Sholes"
    document = _ingest(make_channel(), "text/docling__multi_page.pdf")
    page = Page.objects.get(document=document, number=1)
    start, end, *box = next(
        line for line in page.lines if sentence in page.text[line[0] : line[1]]
    )
    line_text = page.text[start:end]
    assert line_text.startswith("mid-19th century.")

    pdf = pdfium.PdfDocument(str(PDFS / "text/docling__multi_page.pdf"))
    pdf_page = pdf[0]
    width, height = pdf_page.get_size()
    textpage = pdf_page.get_textpage()
    found = textpage.search(line_text, match_case=True).get_next()
    assert found is not None
    index, count = found
    rects = [textpage.get_rect(i) for i in range(textpage.count_rects(index, count))]
    left = min(r[0] for r in rects) / width
    right = max(r[2] for r in rects) / width
    top = 1 - max(r[3] for r in rects) / height
    bottom = 1 - min(r[1] for r in rects) / height
    x0, y0, x1, y1 = box
    assert abs(x0 - left) < 0.005 and abs(x1 - right) < 0.005
    # PDFium's rectangles hug the glyphs; a line box spans the font's ascent and
    # descent, so it holds them and is not much taller.
    assert y0 <= top + 0.002 and y1 >= bottom - 0.002
    assert (y1 - y0) < 2.5 * (bottom - top)
