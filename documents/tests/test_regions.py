"""documents.regions: a quote's span on its page and the boxes of its lines."""

import pytest
from django.core.files import File

from documents.access import COMMAND_LINE
from documents.models import Page
from documents.regions import (
    PageSource,
    add_passage_regions,
    line_regions,
    load_pages,
    locate,
    squeeze,
)
from documents.results import RetrievedChunk
from documents.services.documents import create_document
from documents.services.ingestion import ingest_document
from documents.tests.pdf_lines import page_size, pdfium_lines, union

HANDBOOK = "pdfs/text/docling__amt_handbook_sample.pdf"
BOOTS = (
    "The Boots self-locking nut is of one piece, all-metal construction designed "
    "to hold tight despite severe vibration."
)


def passage(chunk_id, document_id, page_number, text, score) -> RetrievedChunk:
    return RetrievedChunk(
        chunk_id=chunk_id,
        document_id=document_id,
        document_title="t",
        page_number=page_number,
        text=text,
        score=score,
    )


def test_a_quote_is_found_whatever_its_whitespace():
    """Line breaks and runs of spaces in the page, or their absence in the
    quote, don't stop a quote being found; the span covers the page's own
    characters from the quote's first to its last."""
    text = "Intro.\nThe nut is\n  of one   piece.\nAfter."
    span = locate(squeeze(text), "The nut is of one piece.")
    assert span is not None
    assert text[span[0] : span[1]] == "The nut is\n  of one   piece."
    assert locate(squeeze(text), "not on the page") is None
    assert locate(squeeze(text), "   ") is None


def test_the_first_match_after_a_position_wins():
    """A quote that occurs twice is found where it is looked for."""
    text = "Repeat me. Other. Repeat me."
    assert locate(squeeze(text), "Repeat me.", near=5) == (18, 28)
    assert locate(squeeze(text), "Repeat me.") == (0, 10)
    # Past the last occurrence it falls back to the first.
    assert locate(squeeze(text), "Repeat me.", near=25) == (0, 10)


def test_regions_are_the_boxes_of_the_lines_the_span_overlaps():
    """Every line whose characters overlap [start, end) gives its box, rounded
    to four places; malformed entries mark nothing."""
    lines = [
        [0, 10, 0.1, 0.1, 0.9, 0.12],
        [11, 20, 0.1, 0.13, 0.5, 0.15],
        [21, 30, 0.1, 0.16, 0.7, 0.181234],
        ["bad"],
        None,
    ]
    assert line_regions(lines, 12, 25) == [
        {"x0": 0.1, "y0": 0.13, "x1": 0.5, "y1": 0.15},
        {"x0": 0.1, "y0": 0.16, "x1": 0.7, "y1": 0.1812},
    ]
    assert line_regions(lines, 10, 11) == []
    assert line_regions([], 0, 5) == []


@pytest.mark.django_db
def test_regions_of_a_known_sentence_match_pdfium_boxes(make_channel, shared_data):
    """The regions of a sentence of the FAA handbook page, as ingested, are the
    boxes PDFium gives the characters of the two lines it spans."""
    path = shared_data / HANDBOOK
    channel = make_channel("regions")
    with path.open("rb") as handle:
        document = create_document(
            channel=channel,
            file=File(handle, name=path.name),
            actor=COMMAND_LINE,
            enqueue=False,
        )
    document = ingest_document(document_id=document.pk)
    page = Page.objects.get(document=document, number=1)
    assert page.lines  # ingestion keeps a box per text line
    source = load_pages([(document.pk, 1)])[(document.pk, 1)]
    span = source.locate(BOOTS)
    assert span is not None
    assert " ".join(page.text[span[0] : span[1]].split()) == BOOTS

    size = page_size(path, 1)
    expected = [
        union(boxes, size)
        for text, boxes in pdfium_lines(path, 1)
        if text.strip()
        and (text.strip() in BOOTS or BOOTS.startswith(text.strip()))
        and len(text.strip()) > 20
    ]
    assert len(expected) == 2  # "The Boots … all-metal" / "construction … vibration."
    regions = source.regions(*span)
    found = [(r["x0"], r["y0"], r["x1"], r["y1"]) for r in regions]
    assert len(found) == len(expected)
    for box, want in zip(found, expected, strict=True):
        assert box == pytest.approx(want, abs=0.002)
    # Top to bottom, one line under the other, inside the page.
    assert regions[0]["y1"] <= regions[1]["y0"] + 0.002
    assert all(
        0 <= r["x0"] < r["x1"] <= 1 and 0 <= r["y0"] < r["y1"] <= 1 for r in regions
    )


@pytest.mark.django_db
def test_passages_get_the_boxes_of_their_lines(make_channel, fake_embedder):
    """add_passage_regions gives each retrieved chunk the boxes of the lines it
    covers; a page without line positions gives none."""
    from documents.tests.corpus import add_document

    channel = make_channel("passages")
    document = add_document(
        channel, pages=["Alpha line one.\nBeta line two.", "Gamma."]
    )
    Page.objects.filter(document=document, number=1).update(
        lines=[[0, 15, 0.1, 0.1, 0.5, 0.12], [16, 30, 0.1, 0.13, 0.5, 0.15]]
    )
    chunks = [
        passage(1, document.pk, 1, "Beta line two.", 1.0),
        passage(2, document.pk, 2, "Gamma.", 0.5),
        passage(3, document.pk, 7, "Gone.", 0.1),
    ]
    add_passage_regions(chunks)
    assert chunks[0].regions == [{"x0": 0.1, "y0": 0.13, "x1": 0.5, "y1": 0.15}]
    assert chunks[1].regions == []
    assert chunks[2].regions == []


def test_a_page_source_locates_and_marks():
    """PageSource keeps its squeezed text and answers both questions."""
    page = PageSource(1, 2, 3, "One two.\nThree four.", [[9, 20, 0, 0.5, 1, 0.6]])
    start, end = page.locate("Three four.")
    assert (start, end) == (9, 20)
    assert page.regions(start, end) == [{"x0": 0.0, "y0": 0.5, "x1": 1.0, "y1": 0.6}]
