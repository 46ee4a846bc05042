"""The offline default generator: quotes the retrieved sentences that answer."""

import math
import re
from collections import Counter

import Stemmer

from documents.generation.base import Answer, Citation, citation_label, finish
from documents.search.service import RetrievedChunk

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])|\n{2,}")
MIN_SENTENCE_WORDS = 3
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his
    how i if in into is it its itself just me more most my myself no nor not now of off
    on once only or other our ours ourselves out over own same she should so some such
    than that the their theirs them themselves then there these they this those through
    to too under until up very was we were what when where which while who whom why will
    with would you your yours yourself yourselves""".split()
)


class ExtractiveGenerator:
    """Picks the sentences of the top chunks that share the most (rare) words with
    the question, keeps them in reading order per source and cites each."""

    def __init__(self, *, max_chunks: int = 5, max_sentences: int = 4):
        self.max_chunks = max_chunks
        self.max_sentences = max_sentences
        self._stemmer = Stemmer.Stemmer("english")

    def _terms(self, text: str) -> list[str]:
        words = [w.lower() for w in _WORD.findall(text)]
        return self._stemmer.stemWords([w for w in words if w not in _STOP_WORDS])

    def generate(self, query: str, chunks: list[RetrievedChunk]) -> Answer:
        wanted = set(self._terms(query))
        top = chunks[: self.max_chunks]
        sentences: list[tuple[int, int, str, RetrievedChunk]] = []
        seen: set[str] = set()
        for rank, chunk in enumerate(top):
            for position, sentence in enumerate(_SENTENCE_END.split(chunk.text)):
                sentence = " ".join(sentence.split())
                # Headings and fragments answer nothing; overlapping chunks repeat
                # their shared sentences, which are quoted once.
                if len(sentence.split()) >= MIN_SENTENCE_WORDS and sentence not in seen:
                    seen.add(sentence)
                    sentences.append((rank, position, sentence, chunk))
        if not wanted or not sentences:
            return finish("No passage in the documents answers this question.", [])
        # Terms in fewer sentences say more about which sentence answers.
        spread = Counter(
            term for *_, text, _ in sentences for term in set(self._terms(text))
        )
        scored = []
        for rank, position, text, chunk in sentences:
            shared = wanted & set(self._terms(text))
            if not shared:
                continue
            weight = sum(math.log(1 + len(sentences) / spread[t]) for t in shared)
            scored.append((weight / (1 + 0.15 * rank), rank, position, text, chunk))
        if not scored:
            return finish("No passage in the documents answers this question.", [])
        best = sorted(scored, key=lambda item: -item[0])[: self.max_sentences]
        best.sort(key=lambda item: (item[1], item[2]))
        parts: list[str] = []
        citations: list[Citation] = []
        cited: set[tuple[int, int]] = set()
        for _, _, _, text, chunk in best:
            parts.append(
                f"{text} {citation_label(chunk.document_id, chunk.page_number)}"
            )
            key = (chunk.document_id, chunk.page_number)
            if key not in cited:
                cited.add(key)
                citations.append(
                    Citation(
                        document_id=chunk.document_id,
                        page_number=chunk.page_number,
                        chunk_id=chunk.chunk_id,
                        quote=text,
                    )
                )
        return finish(" ".join(parts), citations)
