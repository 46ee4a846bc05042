"""A passage cut into the units an answer can quote: sentences for prose, lines
for verse, with the lines that are headings, captions, questions and table rows
told apart.

Sentence boundaries come from Bling Fire (Microsoft's finite-state sentence
breaker): it knows abbreviations and initials ("STEVEN E. MERCER, ESQ.",
"Judge S. Arthur Spiegel", "Docket No. FAA-2020-0686"), runs in C, and gives
character offsets. Headings have no place in its model, and in PDF text they sit
on a line of their own without a full stop, so lines are classified first and
headings are cut out before sentences are found. Verse (a run of short lines,
most starting with a capital and running on without a full stop) is quoted line by line:
each line would otherwise look like a heading. A caption ("Figure 7-26.
Self-locking nuts.") names a drawing, not what the text says: it is never
quoted. A reader can say which lines are headings (a PDF's lines set in large or
bold type, documents.ingestion.context); such a line is one whatever its words,
and marked lines of one level in a row are one heading.
"""

import bisect
import re
from dataclasses import dataclass, replace
from enum import StrEnum

import blingfire

from documents.generation.memo import LRU, text_key
from documents.ingestion.context import Marks, continues_heading


class Kind(StrEnum):
    SENTENCE = "sentence"
    ROW = "row"  # a line of a table: a label and figures
    QUESTION = "question"
    HEADING = "heading"
    LINE = "line"  # a line of verse
    CAPTION = "caption"  # "Figure 3. …", "Table 1: …"
    FRAGMENT = "fragment"


@dataclass(frozen=True)
class Sentence:
    """A unit of a passage: its text (whitespace collapsed), where it is in the
    passage (`start`/`end`, end exclusive) and what it is."""

    text: str
    start: int
    end: int
    kind: Kind

    @property
    def table_row(self) -> bool:
        """A row of a Markdown table: it answers whatever its cells hold."""
        return self.kind == Kind.ROW and self.text.startswith("|")

    @property
    def table_header(self) -> bool:
        """The header line of a Markdown table: it titles the rows under it."""
        return self.kind == Kind.HEADING and self.text.startswith("|")

    @property
    def quotable(self) -> bool:
        return self.kind in (Kind.SENTENCE, Kind.ROW, Kind.LINE)


_MARKDOWN_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
# A Markdown table's line ("| Alice | 35 |") and its rule ("| --- | --- |"):
# how Word, PowerPoint, Excel and HTML tables are read.
_TABLE_LINE = re.compile(r"^\s*\|.*\|\s*$")
_TABLE_RULE = re.compile(r"^\s*\|(?:\s*:?-+:?\s*\|)+\s*$")
_DOT_LEADERS = re.compile(r"(?:\.\s?){4,}")
_ENDS_SENTENCE = re.compile(r"[.!?:;…][\"'”’)\]]*$")
_ENDS_CLAUSE = re.compile(r"[,–—-]$")
_FIELD_LABEL = re.compile(r"^[A-Z][A-Z ]+:\s+\S")
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
_FIGURE = re.compile(r"\d[\d,.%]*")
# A line ending in one of these words runs on into the next line.
_RUN_ON = frozenset(
    "a an and as at by for from in into of on or that the to with".split()
)
_CAPTION_LABEL = (
    r"(?:Figure|Fig\.|Table|Chart|Exhibit|Plate)\s+[A-Z]?\d+(?:[-–.]\d+)*[.:]"
)
_CAPTION = re.compile("^" + _CAPTION_LABEL)
# A label on a line of its own that Bling Fire left at the end of the text
# before it (the drawing's own labels, then "Figure 7-26."): what follows is
# the caption. At the end of a sentence ("as shown in Fig. 5.") it is none.
_CAPTION_AT_END = re.compile(r"\n\s*" + _CAPTION_LABEL + r"\s*$")
# Bling Fire keeps these inside a sentence, but a line cut can still end a
# unit on one: it never ends a sentence.
_ABBREVIATION_END = re.compile(
    r"(?:\b(?:vs|e\.g|i\.e|No|Nos|Fig|Figs|cf|Cf|al|approx|resp)\.)$"
)
_CLOSED = re.compile(r"[.!?…][\"'”’)\]]*$")
# A run of at least VERSE_MIN_LINES lines of at most VERSE_MAX_CHARS, most
# of VERSE_MIN_WORDS words or more (a glossary's terms are shorter), most
# starting with a capital and most running on without a full stop, is verse
# (or a list without full stops).
VERSE_MIN_LINES = 4
VERSE_MAX_CHARS = 80
VERSE_MIN_WORDS = 4
VERSE_UPPER_SHARE = 0.7
VERSE_OPEN_SHARE = 0.5
VERSE_LONG_SHARE = 0.75
HEADING_MAX_WORDS = 10
# A line of this many words or more with a verb like "is" in it is a sentence
# without its full stop (a slide's text), not a title.
HEADING_VERB_WORDS = 6
_FINITE_VERB = re.compile(
    r"\b(?:is|are|was|were|has|have|had|can|will|does|do|did)\b", re.I
)
# A sentence's end inside the line ("… ArXiv paper. 44bf7d06 …"): a title holds
# no sentence.
_INNER_STOP = re.compile(r"[a-z]{3}[.!?]\s+\S")
MIN_WORDS = 3
# Bling Fire finds no boundary in a table or a list without full stops; longer
# "sentences" than this are cut at their line breaks.
LONG_SENTENCE_CHARS = 400


def _lines(text: str) -> list[tuple[int, int]]:
    spans = []
    position = 0
    for line in text.split("\n"):
        spans.append((position, position + len(line)))
        position += len(line) + 1
    return spans


def _starts_upper(line: str) -> bool:
    stripped = line.lstrip("•·*-–—([\"'“‘ \t")
    return bool(stripped) and (stripped[0].isupper() or stripped[0].isdigit())


def _is_heading(line: str, previous: str | None, following: str | None) -> bool:
    """A line of its own that titles what follows: a Markdown heading, a table of
    contents line, or a short line with no closing punctuation between the end
    of one sentence and the capital starting the next."""
    stripped = line.strip()
    if not stripped:
        return False
    if _MARKDOWN_HEADING.match(line):
        return True
    if _DOT_LEADERS.search(stripped):  # a contents line, unless a row of figures
        return len(_FIGURE.findall(stripped)) < 2
    words = stripped.split()
    if len(words) > HEADING_MAX_WORDS or _ENDS_SENTENCE.search(stripped):
        return False
    if _FIELD_LABEL.match(stripped):  # "DATES: The FAA must …" starts a sentence
        return False
    if _INNER_STOP.search(stripped) or (
        len(words) >= HEADING_VERB_WORDS and _FINITE_VERB.search(stripped)
    ):
        return False
    if _ENDS_CLAUSE.search(stripped) or words[-1].lower() in _RUN_ON:
        return False
    if not _WORD.search(stripped) or not _starts_upper(stripped):
        return False
    starts_block = previous is None or not previous.strip()
    after_sentence = starts_block or bool(_ENDS_SENTENCE.search(previous.strip()))
    before_capital = following is None or not following.strip()
    before_capital = before_capital or _starts_upper(following)
    return after_sentence and before_capital


def _row_like(line: str) -> bool:
    """A line of a table: at least two figures, as many as words."""
    figures = len(_FIGURE.findall(line))
    return figures >= 2 and figures >= len(_WORD.findall(line)) / 2


def _kind(text: str, *, line: bool = False) -> Kind:
    """What a unit is; `line` for one line of a block Bling Fire found no
    sentence boundary in (a table, a list without full stops)."""
    words = _WORD.findall(text)
    figures = len(_FIGURE.findall(text))
    if words and (figures >= max(2, len(words)) or (line and figures)):
        return Kind.ROW
    if len(words) < MIN_WORDS:
        return Kind.FRAGMENT
    if text.rstrip("\"'”’)] ").endswith("?"):
        return Kind.QUESTION
    if line and (text[0].islower() or not _ENDS_SENTENCE.search(text)):
        return Kind.FRAGMENT  # a piece of a sentence broken over lines
    return Kind.SENTENCE


def split_sentences(text: str, headings: Marks = ()) -> list[Sentence]:
    """The units of `text` in reading order, with offsets into `text`;
    `headings` are the lines marked as headings.

    A sentence too short to quote ("No.", "Yes.") is joined to the one after
    it: alone it answers nothing, together they are the answer."""
    units: list[Sentence] = []
    lines = _lines(text)
    marked = _marked_lines(lines, headings)
    verse = _verse_lines(text, lines)
    filled = [i for i, (start, end) in enumerate(lines) if text[start:end].strip()]
    # The page's last line titles nothing after text: it is a slide's or a
    # table's closing line ("Demonstration of simple table syntax").
    closing = filled[-1] if len(filled) > 1 else None
    block_start: int | None = None
    for index, (start, end) in enumerate(lines):
        line = text[start:end]
        previous = text[slice(*lines[index - 1])] if index else None
        following = text[slice(*lines[index + 1])] if index + 1 < len(lines) else None
        if _TABLE_LINE.match(line):
            if block_start is not None:
                units.extend(_block(text, block_start, start))
                block_start = None
            if not _TABLE_RULE.match(line):
                # The header (the line above the rule) titles the rows under it.
                header = following is not None and bool(_TABLE_RULE.match(following))
                units.append(
                    _unit(text, start, end, Kind.HEADING if header else Kind.ROW)
                )
        elif index in marked:
            if block_start is not None:
                units.extend(_block(text, block_start, start))
                block_start = None
            unit = _unit(text, start, end, Kind.HEADING)
            if (
                marked.get(index - 1) == marked[index]
                and units
                and continues_heading(unit.text)
            ):
                # A heading set over several lines is one heading.
                above = units.pop()
                unit = Sentence(
                    f"{above.text} {unit.text}", above.start, unit.end, unit.kind
                )
            units.append(unit)
        elif index in verse:
            if block_start is not None:
                units.extend(_block(text, block_start, start))
                block_start = None
            unit = _unit(text, start, end, Kind.LINE)
            units.append(
                unit if len(unit.text.split()) > 1 else _unit(text, start, end)
            )
        elif not line.strip() or (
            _is_heading(line, previous, following)
            and (index != closing or _MARKDOWN_HEADING.match(line))
        ):
            if block_start is not None:
                units.extend(_block(text, block_start, start))
                block_start = None
            if line.strip():
                units.append(_unit(text, start, end, Kind.HEADING))
        elif block_start is None:
            block_start = start
    if block_start is not None:
        units.extend(_block(text, block_start, len(text)))
    return units


def _marked_lines(lines: list[tuple[int, int]], headings: Marks) -> dict[int, int]:
    """{index of a line: its heading level} for the lines a mark starts on."""
    starts = [start for start, _ in lines]
    marked: dict[int, int] = {}
    for start, _end, level in headings:
        index = bisect.bisect_right(starts, start) - 1
        if 0 <= index and start <= lines[index][1]:
            marked[index] = level
    return marked


def _verse_lines(text: str, lines: list[tuple[int, int]]) -> set[int]:
    """Indices of the lines that are verse: runs of short non-blank lines
    (blank lines between them allowed, as in an e-book where each line is a
    paragraph) shaped like verse, not like wrapped prose, a list of labels or
    a table."""
    verse: set[int] = set()
    run: list[int] = []

    def close() -> None:
        if len(run) < VERSE_MIN_LINES:
            return
        shown = [text[slice(*lines[i])].strip() for i in run]
        upper = sum(1 for line in shown if _starts_upper(line)) / len(shown)
        open_ = sum(1 for line in shown if not _CLOSED.search(line)) / len(shown)
        long = sum(1 for line in shown if len(line.split()) >= VERSE_MIN_WORDS)
        if (
            upper >= VERSE_UPPER_SHARE
            and open_ >= VERSE_OPEN_SHARE
            and long / len(shown) >= VERSE_LONG_SHARE
        ):
            verse.update(run)

    for index, (start, end) in enumerate(lines):
        line = text[start:end].strip()
        if not line:
            continue
        if (
            len(line) > VERSE_MAX_CHARS
            or _MARKDOWN_HEADING.match(line)
            or _row_like(line)
            or len(_WORD.findall(line)) < 2
        ):
            close()
            run = []
        else:
            run.append(index)
    close()
    return verse


def _unit(
    text: str, start: int, end: int, kind: Kind | None = None, *, line: bool = False
) -> Sentence:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    collapsed = " ".join(text[start:end].split())
    if not collapsed:
        return Sentence("", start, end, Kind.FRAGMENT)
    return Sentence(collapsed, start, end, kind or _kind(collapsed, line=line))


def _block(text: str, start: int, end: int) -> list[Sentence]:
    """The sentences of one block of lines (no headings, no blank lines)."""
    block = text[start:end]
    if not block.strip():
        return []
    spans: list[tuple[int, int, bool]] = []
    for first, last in _sentence_spans(block):
        piece = block[first:last]
        if "\n" in piece and sum(map(_row_like, piece.split("\n"))) >= 2:
            # Rows of a table, and the running text between them (a footnote
            # under it): each row a unit, the text split into sentences again.
            position, running = first, None
            for row in piece.split("\n"):
                if _row_like(row):
                    if running is not None:
                        spans.extend(_cut_long(block, running, position - 1))
                        running = None
                    spans.append((position, position + len(row), True))
                elif running is None:
                    running = position
                position += len(row) + 1
            if running is not None:
                spans.extend(_cut_long(block, running, last))
        else:
            spans.extend(_cut_long(block, first, last, split=False))
    units = [_unit(text, start + a, start + b, line=line) for a, b, line in spans]
    units = [unit for unit in units if unit.text]
    joined: list[Sentence] = []
    pending: Sentence | None = None
    labelled = False
    for unit in units:
        if pending is not None:
            combined = f"{pending.text} {unit.text}"
            kind = Kind.CAPTION if pending.kind == Kind.CAPTION else _kind(combined)
            unit = Sentence(combined, pending.start, unit.end, kind)
            pending = None
        if labelled:
            unit = replace(unit, kind=Kind.CAPTION)
        labelled = bool(_CAPTION_AT_END.search(text[unit.start : unit.end]))
        caption = _CAPTION.match(unit.text)
        if caption:
            unit = replace(unit, kind=Kind.CAPTION)
            if caption.end() == len(unit.text):  # the label alone: its text follows
                pending = unit
                continue
        if (
            unit.kind == Kind.FRAGMENT and unit.text[-1:] in (".", "!")
        ) or _ABBREVIATION_END.search(unit.text):
            pending = unit
            continue
        joined.append(unit)
    if pending is not None:
        joined.append(pending)
    return joined


def _sentence_spans(block: str) -> list[tuple[int, int]]:
    """Bling Fire's sentence offsets in `block`."""
    if not block.strip():
        return []
    return list(blingfire.text_to_sentences_and_offsets(block)[1])


def _cut_long(
    block: str, first: int, last: int, *, split: bool = True
) -> list[tuple[int, int, bool]]:
    """Spans of the sentences of block[first:last] (split again when `split`);
    a sentence longer than LONG_SENTENCE_CHARS over several lines is cut at its
    line breaks (a list without full stops)."""
    pieces = (
        [(first + a, first + b) for a, b in _sentence_spans(block[first:last])]
        if split
        else [(first, last)]
    )
    spans: list[tuple[int, int, bool]] = []
    for a, b in pieces:
        if "\n" in block[a:b] and b - a > LONG_SENTENCE_CHARS:
            position = a
            for row in block[a:b].split("\n"):
                spans.append((position, position + len(row), True))
                position += len(row) + 1
        else:
            spans.append((a, b, False))
    return spans


_pages = LRU(2048)


def page_sentences(text: str, headings: Marks = ()) -> list[Sentence]:
    """split_sentences, remembered per text (pages come back query after query)."""
    key = (text_key(text), headings)
    units = _pages.get(key)
    if units is None:
        units = split_sentences(text, headings)
        _pages.put(key, units)
    return units
