"""A page's Markdown text as HTML blocks, every character kept at its offset.

Text-format pages (Word, PowerPoint, Excel, HTML, EPUB, Markdown) are stored as
the Markdown that documents.ingestion.reader.markup writes: ATX headings,
paragraphs whose lines are line breaks, "-" and "1." lists indented by two
spaces a level, "|" tables with a rule after the header row, fenced code and
"> " quotes. Rendering that subset from the stored text, rather than keeping
the reader's HTML beside it, keeps one truth: citation spans are offsets into
the page text, so every rendered character knows its offset and a quote is
marked exactly where it sits. Inline Markdown (emphasis, links, raw HTML) is
shown as the text it is, which also means nothing in a page becomes markup.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

from documents.ingestion.context import Marks, continues_heading
from documents.ingestion.text import MARKDOWN_FENCE

_HEADING = re.compile(r" {0,3}(#{1,6})[ \t]+")
_LIST_ITEM = re.compile(r"( *)([-*+]|\d{1,9}[.)])[ \t]+")
_TABLE_ROW = re.compile(r"\s*\|.*\|\s*$")
_TABLE_RULE = re.compile(r"\s*\|[\s|:-]*-[\s|:-]*$")
_QUOTE = re.compile(r" {0,3}> ?")


@dataclass(frozen=True)
class Line:
    """A line of the page text without its newline, and where it starts."""

    start: int
    text: str

    @property
    def end(self) -> int:
        return self.start + len(self.text)

    def after(self, prefix_length: int) -> "Line":
        return Line(self.start + prefix_length, self.text[prefix_length:])


@dataclass
class Writer:
    """HTML out of ranges of the page text, quoted spans marked in place."""

    text: str
    spans: Sequence[tuple[int, int]]
    mark_id: str
    parts: list[str] = field(default_factory=list)
    marked: bool = False

    def raw(self, html: str) -> None:
        self.parts.append(html)

    def range(self, start: int, end: int) -> None:
        """The text between two offsets, escaped, with the parts of it inside a
        highlight span wrapped in <mark>."""
        cuts = {start, end}
        for span_start, span_end in self.spans:
            cuts.update(c for c in (span_start, span_end) if start < c < end)
        edges = sorted(cuts)
        for left, right in zip(edges, edges[1:], strict=False):
            piece = escape(self.text[left:right], quote=False)
            if any(s <= left and right <= e for s, e in self.spans):
                self.raw(self._mark_open() + piece + "</mark>")
            else:
                self.raw(piece)

    def trimmed(self, start: int, end: int) -> None:
        """A range without the spaces at its edges."""
        while start < end and self.text[start] in " \t":
            start += 1
        while end > start and self.text[end - 1] in " \t":
            end -= 1
        self.range(start, end)

    def _mark_open(self) -> str:
        if self.marked or not self.mark_id:
            return '<mark class="quire-mark">'
        self.marked = True
        return f'<mark class="quire-mark" id="{escape(self.mark_id)}">'

    def html(self) -> str:
        return "".join(self.parts)


def lines_of(text: str) -> list[Line]:
    lines, start = [], 0
    for piece in text.split("\n"):
        lines.append(Line(start, piece))
        start += len(piece) + 1
    return lines


def render_markdown(
    text: str, spans: Sequence[tuple[int, int]], *, mark_id: str
) -> str:
    """The blocks of a Markdown page as (unsanitised, but fully escaped) HTML."""
    writer = Writer(text, spans, mark_id)
    _blocks(writer, lines_of(text))
    return writer.html()


def render_plain(
    text: str,
    spans: Sequence[tuple[int, int]],
    *,
    mark_id: str,
    headings: Marks = (),
) -> str:
    """A plain-text page: its paragraphs, line breaks kept by the stylesheet;
    the lines a reader marked as headings (`headings`, a PDF's lines in large
    or bold type) as headings of their level, marked lines of one level in a
    row as one heading."""
    writer = Writer(text, spans, mark_id)
    paragraph: list[Line] = []
    heading: list[Line] = []
    level = 0
    starts = {start: mark_level for start, _end, mark_level in headings}

    def flush() -> None:
        nonlocal level
        if paragraph:
            writer.raw('<p class="quire-plain">')
            writer.range(paragraph[0].start, paragraph[-1].end)
            writer.raw("</p>")
            paragraph.clear()
        if heading:
            writer.raw(f'<h{level} class="quire-plain">')
            writer.trimmed(heading[0].start, heading[-1].end)
            writer.raw(f"</h{level}>")
            heading.clear()
            level = 0

    for line in lines_of(text):
        marked = next(
            (starts[o] for o in range(line.start, line.end) if o in starts), None
        )
        if marked is not None:
            if not (heading and marked == level and continues_heading(line.text)):
                flush()
            heading.append(line)
            level = marked
        elif line.text.strip():
            if heading:
                flush()
            paragraph.append(line)
        else:
            flush()
    flush()
    return writer.html()


def _starts_block(line: Line) -> bool:
    return bool(
        MARKDOWN_FENCE.match(line.text)
        or _HEADING.match(line.text)
        or _LIST_ITEM.match(line.text)
        or _TABLE_ROW.match(line.text)
        or _QUOTE.match(line.text)
    )


def _blocks(writer: Writer, lines: list[Line]) -> None:
    index = 0
    while index < len(lines):
        line = lines[index]
        if not line.text.strip():
            index += 1
        elif fence := MARKDOWN_FENCE.match(line.text):
            index = _code(writer, lines, index, fence.group(1))
        elif heading := _HEADING.match(line.text):
            level = len(heading.group(1))
            writer.raw(f"<h{level}>")
            writer.trimmed(line.start + heading.end(), line.end)
            writer.raw(f"</h{level}>")
            index += 1
        elif _TABLE_ROW.match(line.text):
            index = _table(writer, lines, index)
        elif _LIST_ITEM.match(line.text):
            index = _list(writer, lines, index)
        elif _QUOTE.match(line.text):
            quoted = []
            while index < len(lines) and (match := _QUOTE.match(lines[index].text)):
                quoted.append(lines[index].after(match.end()))
                index += 1
            writer.raw("<blockquote>")
            _blocks(writer, quoted)
            writer.raw("</blockquote>")
        else:
            index = _paragraph(writer, lines, index)


def _paragraph(writer: Writer, lines: list[Line], index: int) -> int:
    writer.raw("<p>")
    first = True
    while index < len(lines):
        line = lines[index]
        if not line.text.strip() or (not first and _starts_block(line)):
            break
        if not first:
            writer.raw("<br>")
        writer.trimmed(line.start, line.end)
        first = False
        index += 1
    writer.raw("</p>")
    return index


def _code(writer: Writer, lines: list[Line], index: int, fence: str) -> int:
    body = []
    index += 1
    while index < len(lines) and not lines[index].text.lstrip().startswith(fence):
        body.append(lines[index])
        index += 1
    writer.raw("<pre><code>")
    if body:
        writer.range(body[0].start, body[-1].end)
    writer.raw("</code></pre>")
    return index + 1


def _cells(line: Line) -> list[tuple[int, int]]:
    """The ranges of a table row's cells, between unescaped bars."""
    text = line.text
    first = text.index("|")
    last = text.rindex("|")
    cells, start = [], first + 1
    for position in range(first + 1, last + 1):
        if text[position] == "|" and text[position - 1] != "\\":
            cells.append((line.start + start, line.start + position))
            start = position + 1
    return cells


def _table(writer: Writer, lines: list[Line], index: int) -> int:
    rows: list[Line] = []
    header = False
    while index < len(lines) and _TABLE_ROW.match(lines[index].text):
        if _TABLE_RULE.match(lines[index].text):
            header = header or len(rows) == 1
        else:
            rows.append(lines[index])
        index += 1
    writer.raw('<div class="quire-table"><table>')
    for number, row in enumerate(rows):
        cell_tag = "th" if header and number == 0 else "td"
        writer.raw("<thead><tr>" if cell_tag == "th" else "<tr>")
        for start, end in _cells(row):
            writer.raw(f"<{cell_tag}>")
            _cell_text(writer, start, end)
            writer.raw(f"</{cell_tag}>")
        writer.raw("</tr></thead><tbody>" if cell_tag == "th" else "</tr>")
    writer.raw("</tbody></table></div>" if header else "</table></div>")
    return index


def _cell_text(writer: Writer, start: int, end: int) -> None:
    """A cell's text with the backslashes that escape its bars left out."""
    text = writer.text
    while start < end and text[start] in " \t":
        start += 1
    while end > start and text[end - 1] in " \t":
        end -= 1
    position = start
    for offset in range(start, end - 1):
        if text[offset] == "\\" and text[offset + 1] == "|":
            writer.range(position, offset)
            position = offset + 1
    writer.range(position, end)


def _list(writer: Writer, lines: list[Line], index: int) -> int:
    """A list and the lists nested in it (two spaces of indent a level)."""
    first = _LIST_ITEM.match(lines[index].text)
    indent = len(first.group(1))
    tag = "ul" if first.group(2) in "-*+" else "ol"
    writer.raw(f"<{tag}>")
    open_item = False
    while index < len(lines):
        match = _LIST_ITEM.match(lines[index].text)
        if match is None or len(match.group(1)) < indent:
            break
        if len(match.group(1)) > indent:
            index = _list(writer, lines, index)
            continue
        if open_item:
            writer.raw("</li>")
        writer.raw("<li>")
        writer.trimmed(lines[index].start + match.end(), lines[index].end)
        open_item = True
        index += 1
    if open_item:
        writer.raw("</li>")
    writer.raw(f"</{tag}>")
    return index
