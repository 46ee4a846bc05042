"""The offline default generator: quotes the sentences that answer, best first."""

from django.conf import settings

from documents.generation import evidence as evidence_
from documents.generation.base import Answer, finish, refusal
from documents.generation.labels import citation_label, neutralise
from documents.results import RetrievedChunk


def cut(text: str, budget: int) -> str:
    """`text`, or its first `budget` characters cut at a word and marked."""
    if len(text) <= budget:
        return text
    head = text[:budget].rsplit(" ", 1)[0].rstrip(",;:")
    return head + " …"


class ExtractiveGenerator:
    """Answers with the retrieved sentences that score best against the
    question: the best first, then only those close to it that add something,
    within settings.ANSWER_MAX_CHARS; "No references found" when even the best
    scores below settings.ANSWER_MIN_SCORE. Questions and headings are never
    quoted. Each quote is delimited and followed by its label; label-like text
    inside a quote is neutralised, so a document cannot forge a citation."""

    def __init__(self, *, min_score: float | None = None, max_chars: int | None = None):
        self.min_score = settings.ANSWER_MIN_SCORE if min_score is None else min_score
        self.max_chars = settings.ANSWER_MAX_CHARS if max_chars is None else max_chars

    def generate(
        self, query: str, chunks: list[RetrievedChunk], *, query_vector=None
    ) -> Answer:
        found = evidence_.gather(query, chunks, query_vector=query_vector)
        chosen = evidence_.select(
            found, min_score=self.min_score, max_chars=self.max_chars
        )
        if not chosen:
            return refusal()
        parts: list[str] = []
        citations = []
        for item in chosen:
            quoted = cut(item.text, self.max_chars)
            quote = neutralise(quoted)
            label = citation_label(item.chunk.document_id, item.chunk.page_number)
            parts.append(f"“{quote}” {label}")
            citations.append(evidence_.citation(item, quote, quoted=quoted))
        return finish(" ".join(parts), citations)
