"""Contextual chunks: every chunk carries its document's title and the headings
it is under, it is embedded and keyword-indexed with them, and its stored and
quoted text stays the page's own.

The fixtures (documents/tests/fixtures/context.*) are one small field guide in
each reader's format: titled "Field guide to ferns", a section "Propagation"
with the subsections "Sporangia" (a paragraph long enough for several chunks,
none of whose words is "sporangia") and "Division"; the deck has the slides
"Propagation" and "Sporangia", the workbook the sheets "Sporangia" and
"Division".
"""

import pytest
from django.core.files.base import ContentFile

from documents.access import COMMAND_LINE
from documents.ingestion.chunking import chunk_pages
from documents.ingestion.context import chunk_context, retrieval_text
from documents.ingestion.parsed import ParsedPage
from documents.models import Chunk, Document
from documents.search.indexing import prepare_chunks
from documents.search.service import retrieve_chunks
from documents.services.documents import create_document
from documents.services.ingestion import ingest_document
from documents.tests.fixtures import FIXTURES, make_pdf, make_styled_pdf

TITLE = "Field guide to ferns"
# The subsection's paragraph, whose later chunks hold none of the headings.
UNDER_SPORANGIA = "mist it every morning"


@pytest.fixture
def small_chunks(settings):
    settings.CHUNK_SIZE = 120
    settings.CHUNK_OVERLAP = 0


def _ingest(channel, name: str, data: bytes | None = None, **options) -> Document:
    if data is None:
        data = (FIXTURES / name).read_bytes()
    document = create_document(
        actor=COMMAND_LINE,
        channel=channel,
        file=ContentFile(data, name=name),
        filename=name,
        enqueue=False,
        **options,
    )
    document = ingest_document(document_id=document.pk)
    assert document.status == Document.Status.READY, document.status_reason
    return document


def _chunk_with(document: Document, words: str) -> Chunk:
    return next(c for c in document.chunks.order_by("order") if words in c.text)


@pytest.mark.parametrize(
    ("name", "context"),
    [
        ("context.md", f"{TITLE} › Propagation › Sporangia"),
        ("context.html", f"{TITLE} › Propagation › Sporangia"),
        ("context.docx", f"{TITLE} › Propagation › Sporangia"),
        ("context.epub", f"{TITLE} › Propagation › Sporangia"),
        ("context.pptx", f"{TITLE} › Sporangia"),
    ],
)
def test_a_chunk_carries_its_title_and_heading_path(
    name, context, make_channel, fake_embedder, small_chunks
):
    """Word, web, e-book and Markdown chunks are under their section ›
    subsection, a slide's under the slide's title, each after the document's
    title."""
    document = _ingest(make_channel(), name)
    assert document.title == TITLE
    assert _chunk_with(document, UNDER_SPORANGIA).context == context
    division = _chunk_with(document, "sharp spade") if "pptx" not in name else None
    if division is not None:
        # The chunk opens with its own heading, which the context doesn't repeat.
        assert division.text.lstrip("# ").startswith("Division")
        assert division.context == f"{TITLE} › Propagation"


def test_a_sheets_rows_carry_the_sheet_name(make_channel, fake_embedder, small_chunks):
    """Every chunk of a sheet's table is under the sheet's name; the next
    sheet's name replaces it (sheets and slides don't inherit headings)."""
    document = _ingest(make_channel(), "context.xlsx")
    rows = [c for c in document.chunks.order_by("order") if "Fern number" in c.text]
    assert len(rows) > 1
    assert {c.context for c in rows} == {f"{TITLE} › Sporangia"}
    royal = _chunk_with(document, "Royal fern")
    assert royal.context in {TITLE, f"{TITLE} › Division"}
    assert "Sporangia" not in royal.context


def test_plain_text_and_pdf_chunks_carry_the_title(
    make_channel, fake_embedder, small_chunks
):
    """Formats without marked headings give their chunks the document's title;
    a chunk that opens with the title (a text that starts with it) has no
    context to add."""
    channel = make_channel()
    paragraph = (
        "Each frond carries small brown dots on its underside. Shake a ripe frond "
        "over damp compost in a closed tray and mist it every morning."
    )
    text = _ingest(
        channel,
        "ferns.txt",
        f"{TITLE}\n\n{paragraph}".encode(),
        title=TITLE,
        content_type="text/plain",
    )
    contexts = [c.context for c in text.chunks.order_by("order")]
    assert contexts[0] == ""
    assert set(contexts[1:]) == {TITLE}
    pdf = _ingest(
        channel,
        "ferns.pdf",
        make_pdf(["Sowing spores", "Each frond carries small brown dots."]),
        title="Sowing ferns",
    )
    assert {c.context for c in pdf.chunks.all()} == {"Sowing ferns"}


def test_pdf_chunks_carry_the_headings_set_in_large_type(
    make_channel, fake_embedder, small_chunks
):
    """A PDF's chunks are under the headings its type marks (section ›
    subsection, the title set largest being the document's title), carried
    over to the next page; a bold line of body size is one more level."""
    body = "Each frond carries small brown dots on its underside, the sporangia."
    data = make_styled_pdf(
        [
            [
                (TITLE, 20, True),
                ("Propagation", 15, True),
                *[(body, 11, False)] * 3,
                ("Sporangia", 13, True),
                *[(body, 11, False)] * 3,
            ],
            [
                ("Shake a ripe frond over damp compost and", 11, False),
                (f"{UNDER_SPORANGIA}.", 11, False),
                ("Division", 11, True),
                ("Lift the clump in spring and cut it with a sharp spade.", 11, False),
            ],
        ]
    )
    document = _ingest(make_channel(), "ferns.pdf", data)
    assert document.title == TITLE
    assert _chunk_with(document, UNDER_SPORANGIA).context == (
        f"{TITLE} › Propagation › Sporangia"
    )
    assert _chunk_with(document, "sharp spade").context == (
        f"{TITLE} › Propagation › Sporangia › Division"
    )
    # The stored text is the page's own: no heading marks in it.
    assert document.pages.get(number=1).text.startswith(f"{TITLE}\nPropagation\n")


def test_the_stored_and_quoted_text_is_the_pages_own(
    make_channel, fake_embedder, small_chunks
):
    """The context is not in a chunk's stored text nor in what a search returns:
    each chunk's text is a piece of its page, as before."""
    channel = make_channel()
    document = _ingest(channel, "context.md")
    for chunk in document.chunks.select_related("page"):
        assert chunk.text in chunk.page.text
    chunk = _chunk_with(document, UNDER_SPORANGIA)
    assert chunk.context and chunk.context not in chunk.text
    found = retrieve_chunks(channel, "sporangia morning", limit=3)
    stored = {c.pk: c.text for c in document.chunks.all()}
    assert chunk.pk in {result.chunk_id for result in found}
    assert all(result.text == stored[result.chunk_id] for result in found)


def test_a_chunk_is_embedded_and_weighted_with_its_context(
    make_channel, fake_embedder, small_chunks
):
    """The vector is the embedding of context and text together, and the
    keyword index (search vector and BM25 terms) holds the context's words."""
    document = _ingest(make_channel(), "context.md")
    chunk = _chunk_with(document, UNDER_SPORANGIA)
    expected = fake_embedder.embed_documents(
        [retrieval_text(chunk.context, chunk.text)]
    )[0]
    assert list(chunk.embedding) == pytest.approx(expected, abs=1e-6)
    lexemes = Chunk.objects.filter(pk=chunk.pk).values_list("search_vector", flat=True)
    assert "'sporangia'" in lexemes[0]
    assert "sporangia" not in chunk.text.lower()


@pytest.mark.parametrize("mode", ["keyword", "vector", "hybrid"])
def test_a_heading_word_finds_the_chunks_under_the_heading(
    mode, make_channel, fake_embedder, small_chunks
):
    """A search for a subsection's name finds the chunks under it, although
    their own text lacks the word."""
    channel = make_channel(retriever_mode=mode)
    document = _ingest(channel, "context.docx")
    chunk = _chunk_with(document, UNDER_SPORANGIA)
    assert "sporangia" not in chunk.text.lower()
    found = [
        result.chunk_id for result in retrieve_chunks(channel, "sporangia", limit=4)
    ]
    assert chunk.pk in found


def test_chunks_without_a_context_are_indexed_as_before(make_channel, db):
    """Chunks made before contexts existed (context "") keep the weights of
    their text alone."""
    channel = make_channel()
    without = Chunk(text="Spores ripen in late summer.", context="")
    plain = Chunk(text="Spores ripen in late summer.")
    prepare_chunks(channel, [without])
    prepare_chunks(channel, [plain])
    assert without.terms.to_list() == plain.terms.to_list()
    assert retrieval_text("", plain.text) == plain.text


def test_headings_in_code_and_headings_already_said_are_not_context():
    """A `#` line inside fenced code is no heading; a part the chunk's opening
    line says, or a heading of its own, is left out; nothing repeats."""
    page = ParsedPage(
        number=1,
        text="# Guide\n\n## Setup\n\n```\n# not a heading\n```\n\nRun the installer.",
        markdown=True,
    )
    chunks = chunk_pages([page], chunk_size=30, chunk_overlap=0, title="Guide")
    assert chunks[0].text == "# Guide\n\n## Setup"
    assert chunks[-1].text == "Run the installer."
    assert [c.context for c in chunks] == ["", "Guide › Setup", "Guide › Setup"]
    assert chunk_context("Guide", ["Guide", "Setup"], "Setup\n\ntext") == "Guide"
    assert chunk_context("", [], "text") == ""


def test_a_slide_does_not_inherit_the_previous_slides_title():
    """Self-contained pages (slides, sheets) start with no open heading."""
    pages = [
        ParsedPage(number=1, text="# Costs\n\nTwelve euros.", markdown=True),
        ParsedPage(number=2, text="No title here.", markdown=True, self_contained=True),
    ]
    chunks = chunk_pages(pages, chunk_size=1000, chunk_overlap=0, title="Deck")
    assert [c.context for c in chunks] == ["Deck", "Deck"]
