from documents.ingestion.chunking import chunk_pages
from documents.ingestion.parsed import ParsedPage


def _pages(*texts: str) -> list[ParsedPage]:
    return [ParsedPage(number=i, text=t) for i, t in enumerate(texts, start=1)]


def _sentences(tag: str, count: int) -> str:
    return " ".join(f"{tag} sentence number {i} ends here." for i in range(count))


def test_chunks_never_cross_pages():
    """Every chunk's text comes from the page it is numbered with."""
    pages = _pages(_sentences("alpha", 60), _sentences("beta", 60))
    chunks = chunk_pages(pages, chunk_size=200, chunk_overlap=40)
    assert {chunk.page_number for chunk in chunks} == {1, 2}
    for chunk in chunks:
        assert chunk.text in pages[chunk.page_number - 1].text
        other = "beta" if chunk.page_number == 1 else "alpha"
        assert other not in chunk.text


def test_order_follows_reading_order_over_the_document():
    """`order` counts 0, 1, 2... across pages; page numbers never go back; within a
    page, chunks appear in the order of the text."""
    pages = _pages(_sentences("one", 30), "", _sentences("three", 30))
    chunks = chunk_pages(pages, chunk_size=150, chunk_overlap=0)
    assert [chunk.order for chunk in chunks] == list(range(len(chunks)))
    numbers = [chunk.page_number for chunk in chunks]
    assert numbers == sorted(numbers)
    for page in pages:
        positions = [
            page.text.index(chunk.text)
            for chunk in chunks
            if chunk.page_number == page.number
        ]
        assert positions == sorted(positions)


def test_pages_without_text_yield_no_chunks():
    """Blank and image-only pages contribute nothing."""
    chunks = chunk_pages(
        _pages("", "  \n ", "real words"), chunk_size=100, chunk_overlap=10
    )
    assert [(chunk.page_number, chunk.text) for chunk in chunks] == [(3, "real words")]


def test_chunks_respect_size_and_overlap():
    """Chunks stay within chunk_size; consecutive chunks of a page overlap."""
    text = _sentences("gamma", 80)
    chunks = chunk_pages(_pages(text), chunk_size=300, chunk_overlap=60)
    assert len(chunks) > 3
    assert all(len(chunk.text) <= 300 for chunk in chunks)
    for first, second in zip(chunks, chunks[1:], strict=False):
        assert first.text[-20:] in text
        assert set(first.text.split()[-4:]) & set(second.text.split()[:12])


def test_short_page_is_one_chunk():
    """A page shorter than chunk_size is a single chunk equal to its text."""
    chunks = chunk_pages(_pages("Just one line."), chunk_size=1000, chunk_overlap=150)
    assert [chunk.text for chunk in chunks] == ["Just one line."]
