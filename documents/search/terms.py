"""Tokenising text into hashed term ids for the keyword leg (owned by retrieval)."""

import re
import zlib
from collections import Counter

from pgvector import SparseVector

from documents.models import TERM_DIMENSIONS

_WORD = re.compile(r"\w+", re.UNICODE)


def tokenize(text: str) -> list[str]:
    return [word.lower() for word in _WORD.findall(text)]


def term_id(term: str) -> int:
    return zlib.crc32(term.encode("utf-8")) % TERM_DIMENSIONS


def chunk_term_vector(text: str) -> tuple[SparseVector, int]:
    tokens = tokenize(text)
    counts = Counter(term_id(t) for t in tokens)
    return SparseVector(dict(counts), TERM_DIMENSIONS), len(tokens)
