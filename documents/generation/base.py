"""The interface generators implement; what they return (Answer, Citation) is
defined in documents.results."""

from typing import Protocol

from documents.generation.labels import CITATION
from documents.results import Answer, Citation, RetrievedChunk, citation_label

NO_REFERENCES = "\n\nNo references found"
NOTHING_ANSWERS = "No passage in the documents answers this question."

__all__ = [
    "CITATION",
    "NO_REFERENCES",
    "Answer",
    "Citation",
    "Generator",
    "citation_label",
    "finish",
]


class Generator(Protocol):
    """Writes an answer to `query` from retrieved chunks (best first);
    `query_vector`, when given, is the query's embedding."""

    def generate(
        self, query: str, chunks: list[RetrievedChunk], *, query_vector=None
    ) -> Answer: ...


def finish(text: str, citations: list[Citation]) -> Answer:
    """The answer as returned: "No references found" appended when nothing is cited."""
    text = text.strip()
    if not citations:
        text += NO_REFERENCES
    return Answer(text=text, citations=citations)


def refusal() -> Answer:
    return finish(NOTHING_ANSWERS, [])
