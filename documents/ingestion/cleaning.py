"""Clean text for storage and search, keeping track of where each character was.

The same clean-up applies to every format, so the stored page text, the
keyword index, chunks and answers all read the same: one newline style; words
broken across lines at a hyphen joined again (a real hyphen kept); ligatures and
compatibility characters (full-width forms, mathematical letters, no-break
spaces) folded to their plain letters; combining accents composed; control,
format and private-use characters dropped (PostgreSQL rejects NUL); runs of
spaces collapsed unless the layout means something (Markdown).

For PDF and OCR pages, `clean_page` also carries each line's character offsets
from the raw text over to the cleaned one, so that line boxes stay exact.
"""

import bisect
import functools
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable

# PDFium ends a line on a hyphen with U+0002 (some versions U+FFFE) and puts no
# newline after it; the next line's first character follows at once.
LINE_END_HYPHEN = "\x02\ufffe"
_BROKEN_WORD = re.compile(r"((?:\w+-)*\w+)[\x02\ufffe][ \t]*\n?[ \t]*(\w+)")
_STRAY_HYPHEN = re.compile(r"[\x02\ufffe]")
_SPACES = re.compile(r"[ \t\u00a0\u2000-\u200a\u202f\u205f\u3000]+")
_LINE_EDGES = re.compile(r"[ \t]+\n|\n[ \t]+")
_TRAILING_SPACES = re.compile(r"[ \t]+\n")
_BLANK_LINES = re.compile(r"\n{3,}")
_COMBINING = re.compile(r"[^\W\d_][\u0300-\u036f]+")
_WORDS = re.compile(r"\w+(?:-\w+)*")
# Newline, tab, and the zero-width (non-)joiners that Persian and Indic text need.
_KEPT = "\n\t\u200c\u200d"
# Decompositions folded to plain letters (ligatures, full-width and mathematical
# letters, Arabic presentation forms); superscripts, subscripts, fractions and
# circled or squared forms keep their meaning, so they stay.
_FOLDED_TAGS = {
    "<compat>",
    "<font>",
    "<wide>",
    "<narrow>",
    "<noBreak>",
    "<small>",
    "<initial>",
    "<medial>",
    "<final>",
    "<isolated>",
}
# Hangul compatibility jamo are how Korean text is written; folding would break it.
_NOT_FOLDED = range(0x3130, 0x3190)


@functools.cache
def _replacements() -> dict[str, str]:
    """Characters cleaned away: dropped ("") or folded to what they stand for."""
    table: dict[str, str] = {}
    ranges = [range(0x10000), range(0x1D400, 0x1D800), range(0xE0000, 0xE0080)]
    for code in (c for r in ranges for c in r):
        char = chr(code)
        category = unicodedata.category(char)
        if category in ("Cc", "Cf", "Co", "Cs") and char not in _KEPT:
            table[char] = ""
            continue
        if code in _NOT_FOLDED:
            continue
        if unicodedata.decomposition(char).split(" ", 1)[0] in _FOLDED_TAGS:
            folded = unicodedata.normalize("NFKC", char)
            if folded != char and folded[:1].strip():
                table[char] = folded
    table.update({"\x0b": " ", "\x0c": " ", "\u00a0": " "})
    for char in LINE_END_HYPHEN:
        table.pop(char, None)  # handled by the hyphen rules first
    return table


@functools.cache
def _replaced_pattern() -> re.Pattern:
    """One character class of every replaced character (as ranges), plus the
    supplementary private-use planes."""
    codes = sorted(ord(char) for char in _replacements())
    parts: list[str] = []
    start = previous = codes[0]
    for code in [*codes[1:], -1]:
        if code == previous + 1:
            previous = code
            continue
        first, last = re.escape(chr(start)), re.escape(chr(previous))
        parts.append(first if start == previous else f"{first}-{last}")
        start = previous = code
    return re.compile("[" + "".join(parts) + "\U000f0000-\U0010ffff]")


class _Tracked:
    """Text with, optionally, the raw offset of each of its characters."""

    def __init__(self, text: str, track: bool):
        self.text = text
        self.origin: list[int] | None = list(range(len(text))) if track else None

    def sub(self, pattern: re.Pattern, replace: Callable[[re.Match], str]) -> None:
        if self.origin is None:
            self.text = pattern.sub(replace, self.text)
            return
        pieces: list[str] = []
        origin: list[int] = []
        last = 0
        for match in pattern.finditer(self.text):
            start, end = match.span()
            pieces.append(self.text[last:start])
            origin.extend(self.origin[last:start])
            replacement = replace(match)
            pieces.append(replacement)
            origin.extend(_spread(match.group(), self.origin[start:end], replacement))
            last = end
        pieces.append(self.text[last:])
        origin.extend(self.origin[last:])
        self.text = "".join(pieces)
        self.origin = origin


def _spread(source: str, offsets: list[int], replacement: str) -> list[int]:
    """Raw offsets for the characters of `replacement`, which took the place of
    `source` (whose characters came from `offsets`): characters the two share
    at the start or the end keep their own offsets ("substan\\x02tially" to
    "substantially" maps exactly); the others take the first source offset."""
    if not offsets or not replacement:
        return []
    prefix = 0
    limit = min(len(source), len(replacement))
    while prefix < limit and source[prefix] == replacement[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and source[-1 - suffix] == replacement[-1 - suffix]:
        suffix += 1
    middle = len(replacement) - prefix - suffix
    anchor = offsets[prefix] if prefix < len(offsets) else offsets[-1]
    tail = offsets[len(offsets) - suffix :] if suffix else []
    return offsets[:prefix] + [anchor] * middle + tail


class Vocabulary:
    """The words of a document, to tell a line-break hyphen from a real one:
    "dual-encoder" written whole elsewhere keeps its hyphen, "substantially"
    written whole elsewhere is joined."""

    def __init__(self) -> None:
        self.words: Counter[str] = Counter()
        self.standalone: Counter[str] = Counter()

    def add(self, text: str) -> None:
        # Fragments of broken words ("substan", "tially") are not words.
        text = _BROKEN_WORD.sub(" ", text)
        for word in _WORDS.findall(text.lower()):
            self.words[word] += 1
            if "-" in word:
                self.words.update(word.split("-"))
            else:
                self.standalone[word] += 1

    def keeps_hyphen(self, left: str, right: str) -> bool:
        joined, hyphened = (left + right).lower(), f"{left}-{right}".lower()
        if self.words[hyphened] > self.words[joined]:
            return True
        if self.words[joined]:
            return False
        # Unknown either way: a capital or a digit after the break is a name or
        # a code ("BERT-Base", "ACL-ARC", "COVID-19"); two words the document
        # uses on their own make a compound ("dual-encoder", "fine-tuned");
        # otherwise it is one word broken in two ("limi-tations").
        if right[:1].isupper() or right[:1].isdigit() or left[-1:].isdigit():
            return True
        last = left.rsplit("-", 1)[-1]
        return "-" in left or (
            len(last) >= 3
            and len(right) >= 3
            and self.standalone[last.lower()] > 0
            and self.standalone[right.lower()] > 0
        )


def clean_text(text: str, *, keep_layout: bool = False) -> str:
    """Text fit for storage and search (see the module docstring)."""
    return _clean(_Tracked(text, track=False), keep_layout, None).text


def clean_page(
    text: str,
    lines: Iterable[list],
    *,
    vocabulary: Vocabulary | None = None,
) -> tuple[str, list[list]]:
    """A page's cleaned text and its lines ([start, end, x0, y0, x1, y1]) with
    offsets moved to the cleaned text; lines left empty are dropped."""
    tracked = _clean(_Tracked(text, track=True), False, vocabulary)
    origin = tracked.origin or []
    cleaned = tracked.text
    moved = []
    for start, end, *box in lines:
        new_start = bisect.bisect_left(origin, start)
        new_end = bisect.bisect_left(origin, end)
        while new_start < new_end and cleaned[new_start].isspace():
            new_start += 1
        while new_end > new_start and cleaned[new_end - 1].isspace():
            new_end -= 1
        if new_end > new_start:
            moved.append([new_start, new_end, *box])
    return cleaned, moved


def _clean(text: _Tracked, keep_layout: bool, vocabulary: Vocabulary | None):
    text.sub(re.compile(r"\r\n?"), lambda _: "\n")
    words = vocabulary or Vocabulary()
    text.sub(
        _BROKEN_WORD,
        lambda m: _join(m, words),
    )
    text.sub(_STRAY_HYPHEN, lambda _: "-")
    replacements = _replacements()
    text.sub(_replaced_pattern(), lambda m: replacements.get(m.group(), ""))
    text.sub(_COMBINING, lambda m: unicodedata.normalize("NFC", m.group()))
    if keep_layout:
        text.sub(_TRAILING_SPACES, lambda _: "\n")
    else:
        text.sub(_SPACES, lambda _: " ")
        text.sub(_LINE_EDGES, lambda _: "\n")
    text.sub(_BLANK_LINES, lambda _: "\n\n")
    _strip(text)
    return text


def _join(match: re.Match, vocabulary: Vocabulary) -> str:
    left, right = match.group(1), match.group(2)
    if vocabulary.keeps_hyphen(left, right):
        return f"{left}-{right}"
    return left + right


def _strip(text: _Tracked) -> None:
    stripped = text.text.strip()
    if stripped == text.text:
        return
    start = len(text.text) - len(text.text.lstrip())
    if text.origin is not None:
        text.origin = text.origin[start : start + len(stripped)]
    text.text = stripped
