"""Page-aware chunking with LangChain's RecursiveCharacterTextSplitter."""

from collections.abc import Iterable
from dataclasses import dataclass

from langchain_text_splitters import RecursiveCharacterTextSplitter

from documents.ingestion.context import HeadingTrail, chunk_context, marked_headings
from documents.ingestion.parsed import ParsedPage


@dataclass(frozen=True)
class TextChunk:
    """A passage of one page; `order` is its 0-based reading position in the
    whole document, `context` its title and heading path
    (documents.ingestion.context)."""

    page_number: int
    order: int
    text: str
    context: str = ""


def chunk_pages(
    pages: Iterable[ParsedPage],
    *,
    chunk_size: int,
    chunk_overlap: int,
    first_order: int = 0,
    title: str = "",
    headings: HeadingTrail | None = None,
) -> list[TextChunk]:
    """Split each page's text on its own, so that no chunk crosses a page
    boundary; pages without text yield no chunks. Chunks are numbered in reading
    order, page by page, top to bottom, from `first_order` (the number of chunks
    of the document's earlier pages). Each chunk's context is the document's
    `title` and the headings it is under; `headings` carries them over from the
    document's earlier pages."""
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=chunk_size,
        chunk_overlap=min(chunk_overlap, chunk_size // 2),
        strip_whitespace=True,
    )
    headings = headings or HeadingTrail()
    chunks: list[TextChunk] = []
    for page in pages:
        if page.self_contained:
            headings.restart()
        texts = [text for text in splitter.split_text(page.text) if text.strip()]
        # A page without marks is still under the headings of the pages before.
        marks = None if page.markdown else marked_headings(page.lines)
        paths = headings.read(page.text, _offsets(page.text, texts), marks)
        for text, path in zip(texts, paths, strict=True):
            chunks.append(
                TextChunk(
                    page.number,
                    first_order + len(chunks),
                    text,
                    chunk_context(title, path, text),
                )
            )
    return chunks


def _offsets(text: str, pieces: list[str]) -> list[int]:
    """Where each piece (in order, possibly overlapping) starts in `text`."""
    offsets: list[int] = []
    cursor = 0
    for piece in pieces:
        found = text.find(piece, cursor)
        if found < 0:  # the splitter changed the piece; keep the order
            found = cursor
        offsets.append(found)
        cursor = found + 1
    return offsets
