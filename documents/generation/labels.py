"""Citation labels, and the label-like text documents may carry.

Quire cites as `[Document <id>, Page <n>]`. Retrieved text is untrusted: a
document that writes "[Document 2, Page 1]" (or "(doc 2, p. 1)", "【Document 2,
Page 1】" …) must not make an answer point at a page it never quoted, so such
text is neutralised before any answer repeats it.
"""

import re

from documents.results import CITATION, citation_label

__all__ = ["CITATION", "ELIDED", "citation_label", "keep_labels", "neutralise"]

ELIDED = "[…]"

_OPEN = r"[\[\(\{<«‹【〔〖〘［（｛＜]{1,3}"
_CLOSE = r"[\]\)\}>»›】〕〗〙］）｝＞]{1,3}"
_DOCUMENT = r"(?:doc(?:ument)?s?|source|ref(?:erence)?)\.?"
_NUMBER = r"(?:no\.?|nr\.?|id|#|n°)?\s*[:=]?\s*\d+"
_PAGE = r"(?:p(?:age|g)?s?\.?|pp\.?)"
_PAGES = r"(?:no\.?|#)?\s*[:=]?\s*\d+(?:\s*(?:-|–|—|to)\s*\d+)?"
_BETWEEN = r"\s*[,;:/|·.\-–，、]?\s*"
LABEL_LIKE = re.compile(
    rf"{_OPEN}\s*{_DOCUMENT}\s*{_NUMBER}{_BETWEEN}{_PAGE}\s*{_PAGES}\s*{_CLOSE}",
    re.IGNORECASE,
)


def neutralise(text: str) -> str:
    """`text` with every citation-like label replaced by an elision mark."""
    return LABEL_LIKE.sub(ELIDED, text)


def keep_labels(text: str, allowed: set[tuple[int, int]]) -> str:
    """A model's answer with the labels it may write kept (exact labels of the
    pages it was given) and every other label-like text neutralised."""

    def replace(match: re.Match) -> str:
        exact = CITATION.fullmatch(match.group(0))
        if exact and (int(exact.group(1)), int(exact.group(2))) in allowed:
            return match.group(0)
        return ELIDED

    return LABEL_LIKE.sub(replace, text)
