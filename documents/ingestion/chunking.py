"""Page-aware chunking with LangChain's RecursiveCharacterTextSplitter."""

from collections.abc import Iterable
from dataclasses import dataclass

from langchain_text_splitters import RecursiveCharacterTextSplitter

from documents.ingestion.parsed import ParsedPage


@dataclass(frozen=True)
class TextChunk:
    """A passage of one page; `order` is its 0-based reading position in the
    whole document."""

    page_number: int
    order: int
    text: str


def chunk_pages(
    pages: Iterable[ParsedPage],
    *,
    chunk_size: int,
    chunk_overlap: int,
    first_order: int = 0,
) -> list[TextChunk]:
    """Split each page's text on its own, so that no chunk crosses a page
    boundary; pages without text yield no chunks. Chunks are numbered in reading
    order, page by page, top to bottom, from `first_order` (the number of chunks
    of the document's earlier pages)."""
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=chunk_size,
        chunk_overlap=min(chunk_overlap, chunk_size // 2),
        strip_whitespace=True,
    )
    chunks: list[TextChunk] = []
    for page in pages:
        if not page.has_text:
            continue
        for text in splitter.split_text(page.text):
            if text.strip():
                chunks.append(TextChunk(page.number, first_order + len(chunks), text))
    return chunks
