"""Which lines of a page are headings, from how large they are set: the PDF
reader's type sizes and OCR's line heights against the body text's.

A line set larger than the body is a heading of a level by how much larger
(1 for twice the body's size or more, one level deeper for each step of 20%
smaller), unless it reads as something else set large: a run of more than a
few lines in one size (a cover's blurb), a line running on into a line of
body text starting in lower case (wrapped prose), a sentence, a row of figures
or a contents line.
"""

import math
import re

# At most this many words a line, and runs of at most this many lines.
HEADING_MAX_WORDS = 16
HEADING_MAX_LINES = 3
LEVEL_TOP_RATIO = 2.0
LEVEL_STEP = 1.2
# Bold type of the body's size (PDF) is this level; larger type one above it
# at the deepest.
LOWEST_LEVEL = 6
# A line of this many words ending in a full stop is a sentence in large type.
SENTENCE_MIN_WORDS = 4

_FIGURES = re.compile(r"\d[\d,.%]*")
_DOT_LEADERS = re.compile(r"(?:\.\s?){4,}")
_SENTENCE_END = re.compile(r"[.!][\"'”’)\]]*$")


def size_level(ratio: float) -> int:
    """The level of a heading set `ratio` times the body's size (at least 1)."""
    steps = math.log(LEVEL_TOP_RATIO / ratio, LEVEL_STEP)
    return min(max(1 + round(steps), 1), LOWEST_LEVEL - 1)


def plausible(text: str, lines: list[list], levels: list[int | None]) -> list:
    """`levels` (one per line of `lines`, None for body text) without the
    lines that are large type but no heading (see the module docstring)."""
    levels = list(levels)
    index = 0
    while index < len(levels):
        run = index
        while (
            run < len(levels)
            and levels[run] is not None
            and (levels[run] == levels[index])
        ):
            run += 1
        if run - index > HEADING_MAX_LINES:
            levels[index:run] = [None] * (run - index)
        index = max(run, index + 1)
    # A line running on into a line of body text ("Women in families with an"
    # above "inherited BRCA1 …") is wrapped prose in large type.
    for i, level in enumerate(levels[:-1]):
        following = text[lines[i + 1][0] : lines[i + 1][1]].lstrip()
        if level is not None and levels[i + 1] != level and following[:1].islower():
            levels[i] = None
    return [
        level if level is not None and heading_shaped(text[line[0] : line[1]]) else None
        for line, level in zip(lines, levels, strict=True)
    ]


def heading_shaped(line: str) -> bool:
    """A line that can be a heading: a few words, one of them a word of
    letters, not a sentence, a row of figures nor a contents line."""
    words = line.split()
    if not words or len(words) > HEADING_MAX_WORDS or _DOT_LEADERS.search(line):
        return False
    if not any(sum(c.isalpha() for c in word) >= 2 for word in words):
        return False
    if len(words) >= SENTENCE_MIN_WORDS and _SENTENCE_END.search(line.rstrip()):
        return False  # "A: There are several types of breast cancer."
    figures = len(_FIGURES.findall(line))
    return figures < 2 or figures < len(words) / 2
