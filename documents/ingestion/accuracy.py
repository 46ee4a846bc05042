"""Character and word error rates of read text against the true text.

Used by `make bench-ocr` (benchmarks/ocr.py) and the OCR tests. Both texts are
normalised first as OCR evaluations do: whitespace collapsed, typographic quotes
and dashes made plain.
"""

import numpy as np

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
