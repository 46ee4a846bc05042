"""Where a quote sits on its page: its span in the page text and the boxes of the
lines it covers.

Page.lines holds `[start, end, x0, y0, x1, y1]` per text line: character offsets
into Page.text (end exclusive) and the line's box in fractions of the page's
width and height, origin top left (and, for a heading, its level). A quote is
found in the page text ignoring whitespace (chunks and answers collapse it), and
its regions are the boxes of the lines that overlap its span.
"""

import functools
import json
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
from django.db.models import Q

from documents.ingestion.context import Marks, marked_headings
from documents.models import Chunk, Page


@dataclass
class PageSource:
    """The text and line boxes of one page, with what locating needs."""

    id: int
    document_id: int
    number: int
    text: str
    lines: list = field(default_factory=list)
    has_image: bool = False
    _squeezed: tuple[str, np.ndarray] | None = field(default=None, repr=False)

    @functools.cached_property
    def headings(self) -> Marks:
        """(start, end, level) of the lines the reader marked as headings."""
        return marked_headings(self.lines)

    def squeezed(self) -> tuple[str, np.ndarray]:
        """The text without whitespace, and each kept character's offset."""
        if self._squeezed is None:
            self._squeezed = squeeze(self.text)
        return self._squeezed

    def locate(self, quote: str, near: int = 0) -> tuple[int, int] | None:
        """The span of `quote` in the page text (whitespace ignored), the first
        at or after `near` if there is one there, else the first anywhere."""
        return locate(self.squeezed(), quote, near)

    def regions(self, start: int, end: int) -> list[dict]:
        return line_regions(self.lines, start, end)


@functools.cache
def _whitespace() -> tuple[dict, np.ndarray]:
    """What str.split() splits on (no such character lies past U+3000): a
    table that drops them, and their code points."""
    spaces = [c for c in map(chr, range(0x3001)) if c.isspace()]
    table = str.maketrans("", "", "".join(spaces))
    return table, np.array([ord(c) for c in spaces], dtype=np.uint32)


# Answers squeeze the same pages query after query; a page costs about 10 bytes
# per character here.
@functools.lru_cache(maxsize=256)
def squeeze(text: str) -> tuple[str, np.ndarray]:
    """`text` without whitespace, and the offset in `text` of each character
    kept (computed in C: pages are squeezed on every answer)."""
    table, spaces = _whitespace()
    points = np.frombuffer(
        text.encode("utf-32-le", errors="surrogatepass"), dtype=np.uint32
    )
    offsets = np.flatnonzero(~np.isin(points, spaces)).astype(np.int32)
    return text.translate(table), offsets


def locate(
    squeezed: tuple[str, np.ndarray], quote: str, near: int = 0
) -> tuple[int, int] | None:
    """Find `quote` in a squeezed text; (start, end) offsets in the original."""
    haystack, offsets = squeezed
    needle = "".join(quote.split())
    if not needle or not len(offsets):
        return None
    # The squeezed index of the first kept character at or after `near`.
    low = int(np.searchsorted(offsets, near))
    found = haystack.find(needle, low)
    if found < 0:
        found = haystack.find(needle)
    if found < 0:
        return None
    return int(offsets[found]), int(offsets[found + len(needle) - 1]) + 1


def line_regions(lines: list, start: int, end: int) -> list[dict]:
    """The boxes of the lines overlapping [start, end), top to bottom as stored."""
    regions = []
    for line in lines or []:
        try:
            # A seventh item marks a heading (documents.ingestion.context).
            line_start, line_end, x0, y0, x1, y1 = line[:6]
        except (TypeError, ValueError, KeyError):
            continue  # a malformed entry marks nothing
        if line_start < end and line_end > start:
            regions.append(
                {
                    "x0": round(float(x0), 4),
                    "y0": round(float(y0), 4),
                    "x1": round(float(x1), 4),
                    "y1": round(float(y1), 4),
                }
            )
    return regions


def load_pages(
    keys: Iterable[tuple[int, int]], *, with_lines_only: bool = False
) -> dict[tuple[int, int], PageSource]:
    """The pages named by (document id, page number), in one query (only those
    with line positions when `with_lines_only`)."""
    keys = set(keys)
    if not keys:
        return {}
    condition = Q()
    by_document: dict[int, set[int]] = {}
    for document_id, number in keys:
        by_document.setdefault(document_id, set()).add(number)
    for document_id, numbers in by_document.items():
        condition |= Q(document_id=document_id, number__in=sorted(numbers))
    pages = Page.objects.filter(condition)
    if with_lines_only:
        pages = pages.exclude(lines=[])
    rows = pages.values_list("id", "document_id", "number", "text", "lines", "image")
    return {
        (document_id, number): PageSource(
            id, document_id, number, text or "", lines or [], bool(image)
        )
        for id, document_id, number, text, lines, image in rows
    }


# The pages with line positions of the chunks whose ids are the parameter, as
# load_pages(with_lines_only=True) reads them: for a caller that fetches them in
# the same round trip as the chunks (documents.search.service).
PAGES_OF_CHUNKS_SQL = f"""
    SELECT p.id, p.document_id, p.number, p.text, p.lines, p.image
    FROM {Page._meta.db_table} p
    WHERE p.id IN (SELECT c.page_id FROM {Chunk._meta.db_table} c WHERE c.id = ANY(%s))
      AND p.lines <> '[]'::jsonb
"""


def page_sources(rows: Iterable[tuple]) -> dict[tuple[int, int], PageSource]:
    """PAGES_OF_CHUNKS_SQL's rows by (document id, page number); `lines`
    arrives as JSON text from a plain cursor."""
    return {
        (document_id, number): PageSource(
            id,
            document_id,
            number,
            text or "",
            (json.loads(lines) if isinstance(lines, str) else lines) or [],
            bool(image),
        )
        for id, document_id, number, text, lines, image in rows
    }


def add_passage_regions(
    chunks: list, pages: dict[tuple[int, int], PageSource] | None = None
) -> None:
    """Set `regions` on retrieved chunks: the boxes of the lines each chunk
    covers on its page (empty when the page has no line positions). `pages`:
    their pages with line positions, when the caller has read them already."""
    if pages is None:
        pages = load_pages(
            ((chunk.document_id, chunk.page_number) for chunk in chunks),
            with_lines_only=True,
        )
    for chunk in chunks:
        page = pages.get((chunk.document_id, chunk.page_number))
        if page is None or not page.lines:
            chunk.regions = []
            continue
        span = page.locate(chunk.text)
        chunk.regions = page.regions(*span) if span else []
