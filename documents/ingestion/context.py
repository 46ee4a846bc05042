"""What a chunk is found by besides its own text: its document's title and the
headings it sits under (section › subsection, a slide's title, a sheet's name).

The context goes into the text that is embedded and keyword-indexed
(`retrieval_text`), never into the text that is stored, quoted and shown. A
part the chunk's own opening line already says is left out, so that a chunk
that starts with its heading (or a plain-text document that starts with its
title) does not count it twice.
"""

import re

from documents.ingestion.text import MARKDOWN_FENCE

SEPARATOR = " › "
# A reader may mark a line of a page's line boxes ([start, end, x0, y0, x1, y1])
# as a heading with a seventh item, its level: PDF lines set in large or bold
# type (documents.ingestion.reader.pdf).
HEADING_LEVEL_ITEM = 6
MAX_HEADING_LEVEL = 6
# (start, end, level) of the lines of a page marked as headings, in order.
Marks = tuple[tuple[int, int, int], ...]
# A title and a few levels of headings; a longer context is cut at a part.
MAX_CONTEXT_CHARS = 400

_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_MARKUP = re.compile(r"[*_`]+|\[([^\]]*)\]\([^)]*\)")


def retrieval_text(context: str, text: str) -> str:
    """The text a chunk is embedded and keyword-indexed by. Its lexemes are
    those of Chunk.search_vector, which PostgreSQL generates from the same two
    columns."""
    return f"{context}\n\n{text}" if context else text


def _plain(heading: str) -> str:
    return " ".join(_MARKUP.sub(lambda m: m.group(1) or "", heading).split())


def _key(text: str) -> str:
    return " ".join(re.sub(r"^ {0,3}#{1,6}[ \t]+", "", text).split()).casefold()


# "2.1 Healthcare consumers": a numbered line starts a heading of its own.
_NUMBERED = re.compile(r"^\s*\d+(?:\.\d+)*\.?\s")


def continues_heading(line: str) -> bool:
    """Whether a marked line right under a marked line of its level goes on
    with that heading (a title set over two lines) rather than starting one."""
    return not _NUMBERED.match(line)


def marked_headings(lines) -> Marks:
    """(start, end, level) of the lines marked as headings, in order; an entry
    that is not a well-formed mark is no heading."""
    marks = []
    for line in lines or ():
        if not isinstance(line, list | tuple) or len(line) <= HEADING_LEVEL_ITEM:
            continue
        start, end, level = line[0], line[1], line[HEADING_LEVEL_ITEM]
        if (
            all(type(value) is int for value in (start, end, level))
            and 0 <= start < end
            and 1 <= level <= MAX_HEADING_LEVEL
        ):
            marks.append((start, end, level))
    return tuple(sorted(marks))


class HeadingTrail:
    """The headings in effect as a document's pages are read in order: a
    heading closes every open heading of its level or deeper. Headings are
    Markdown's, or the lines a reader marked (`marked_headings`): marked lines
    of one level in a row are one heading set over several lines, unless a
    line is numbered (`continues_heading`)."""

    def __init__(self) -> None:
        self._open: list[tuple[int, str]] = []
        self._fenced = False

    def restart(self) -> None:
        """Forget the open headings (a slide or a sheet starts afresh)."""
        self._open = []
        self._fenced = False

    def read(
        self,
        text: str,
        offsets: list[int],
        marks: Marks | None = None,
    ) -> list[list[str]]:
        """Read one page's text (Markdown, or with its heading lines `marks`);
        for each of the ascending `offsets` into it, the heading path in effect
        at the first line of content at or after it (so a chunk that starts
        with headings is under them)."""
        paths: list[list[str]] = []
        lines = text.split("\n")
        start = end = 0
        previous = ""
        continued = False  # the line before was a marked heading
        for number, line in enumerate(lines):
            start, end = end, end + len(line) + 1
            if marks is None:
                heading = self._heading(line, lines, number, previous)
            else:
                heading = _marked(line, start, end, marks)
            previous = line
            if heading is None:
                if line.strip() and not (marks is None and _SETEXT.match(line)):
                    continued = False
                    while len(paths) < len(offsets) and offsets[len(paths)] < end:
                        paths.append(self._path())
                continue
            level, title = heading
            if (
                continued
                and self._open
                and self._open[-1][0] == level
                and continues_heading(title)
            ):
                title = f"{self._open.pop()[1]} {title}"
            continued = marks is not None
            while self._open and self._open[-1][0] >= level:
                self._open.pop()
            if title:
                self._open.append((level, title))
        paths.extend(self._path() for _ in range(len(offsets) - len(paths)))
        return paths

    def _path(self) -> list[str]:
        return [title for _, title in self._open]

    def _heading(
        self, line: str, lines: list[str], number: int, previous: str
    ) -> tuple[int, str] | None:
        if MARKDOWN_FENCE.match(line):
            self._fenced = not self._fenced
            return None
        if self._fenced:
            return None
        atx = _ATX.match(line)
        if atx:
            return len(atx.group(1)), _plain(atx.group(2))
        following = lines[number + 1] if number + 1 < len(lines) else ""
        underline = _SETEXT.match(following)
        if (
            underline
            and line.strip()
            and not previous.strip()
            and "|" not in line
            and not _ATX.match(line)
        ):
            return (1 if underline.group(1)[0] == "=" else 2), _plain(line)
        return None


def _marked(line: str, start: int, end: int, marks: Marks) -> tuple[int, str] | None:
    """The level and text of the line at [start, end) of the page text when a
    mark starts on it."""
    for mark_start, _mark_end, level in marks:
        if start <= mark_start < end:
            return level, " ".join(line.split())
        if mark_start >= end:
            break
    return None


def chunk_context(title: str, headings: list[str], text: str) -> str:
    """The context of a chunk with `text` under `headings` in a document titled
    `title`: "Title › Section › Subsection", without the parts the chunk says
    already (in its opening line or as a heading of its own)."""
    lines = [line for line in text.split("\n") if line.strip()]
    said = {_key(line) for line in lines[:1]}
    said.update(
        _key(_plain(atx.group(2))) for line in lines if (atx := _ATX.match(line))
    )
    parts: list[str] = []
    for part in [title.strip(), *headings]:
        if part and _key(part) not in said and _key(part) not in map(_key, parts):
            parts.append(part)
    context = ""
    for part in parts:
        longer = f"{context}{SEPARATOR}{part}" if context else part
        if len(longer) > MAX_CONTEXT_CHARS:
            break
        context = longer
    return context
