"""Character and word error rates, word recall and lost lines of read text
against the true text, and the turned and skewed pages OCR is measured on.

Used by `make bench-ocr` (benchmarks/ocr.py) and the OCR tests. Both texts are
normalised first as OCR evaluations do: whitespace collapsed, typographic quotes
and dashes made plain.
"""

from collections import Counter

import numpy as np
from PIL import Image

_PLAIN = str.maketrans(
    {
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u00ab": '"',
        "\u00bb": '"',
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u2014": "-",
        "\u2013": "-",
        "\u2010": "-",
        "\u00ad": "",
    }
)


def normalise(text: str) -> str:
    return " ".join(text.translate(_PLAIN).split())


def edit_distance(a: list, b: list) -> int:
    """Levenshtein distance between two sequences (one numpy row per item of
    `a`: insertions resolved with a running minimum)."""
    if not a:
        return len(b)
    if not b:
        return len(a)
    codes: dict = {}
    left = [codes.setdefault(item, len(codes)) for item in a]
    right = np.array([codes.setdefault(item, len(codes)) for item in b])
    steps = np.arange(len(right) + 1)
    row = steps.copy()
    for index, item in enumerate(left, start=1):
        candidate = np.empty(len(right) + 1, dtype=np.int64)
        candidate[0] = index
        candidate[1:] = np.minimum(row[1:] + 1, row[:-1] + (right != item))
        row = np.minimum.accumulate(candidate - steps) + steps
    return int(row[-1])


def character_error_rate(read: str, truth: str) -> float:
    truth = normalise(truth)
    return edit_distance(list(normalise(read)), list(truth)) / max(1, len(truth))


def word_error_rate(read: str, truth: str) -> float:
    words = normalise(truth).split()
    return edit_distance(normalise(read).split(), words) / max(1, len(words))


def word_recall(read: str, truth: str) -> float:
    """Share of the true words (with their repeats) found in the read text."""
    wanted = Counter(normalise(truth).lower().split())
    found = Counter(normalise(read).lower().split())
    total = sum(wanted.values())
    return sum((wanted & found).values()) / total if total else 1.0


def lines_lost(read: str, truth: str, *, tolerance: float = 0.25) -> list[str]:
    """The true lines that no read line matches: a line matches when its
    character error rate against some read line is at most `tolerance` (a
    misread digit is not a lost line; a row that is missing, or merged into
    another beyond recognition, is)."""
    read_lines = [normalise(line) for line in read.splitlines() if line.strip()]
    lost = []
    for line in truth.splitlines():
        wanted = normalise(line)
        if not wanted:
            continue
        budget = tolerance * len(wanted)
        if not any(
            abs(len(candidate) - len(wanted)) <= budget
            and edit_distance(list(candidate), list(wanted)) <= budget
            for candidate in read_lines
        ):
            lost.append(line)
    return lost


# The ways a page is turned and skewed to test that OCR reads it all the same:
# a name and (quarter turn counter-clockwise, then skew in degrees).
PAGE_VARIANTS = {
    "upright": (0, 0.0),
    "turned 90": (90, 0.0),
    "turned 180": (180, 0.0),
    "turned 270": (270, 0.0),
    "skewed +10": (0, 10.0),
    "skewed -10": (0, -10.0),
}


def page_variant(image: Image.Image, name: str) -> Image.Image:
    """The page image turned and skewed as PAGE_VARIANTS[name] says, the corners
    filled white as a scanner's bed would be."""
    degrees, skew = PAGE_VARIANTS[name]
    page = image.convert("L")
    if degrees:
        page = page.rotate(degrees, expand=True)
    if skew:
        page = page.rotate(
            skew, expand=True, fillcolor=255, resample=Image.Resampling.BICUBIC
        )
    return page
