"""What every generator returns, and the interface generators implement."""

from dataclasses import asdict, dataclass, field
from typing import Protocol

from documents.generation.labels import CITATION, citation_label
from documents.search.service import RetrievedChunk

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


@dataclass
class Citation:
    """A source an answer cites: the chunk, the passage it relied on and where
    that passage is on the page (line boxes in fractions of the page, origin top
    left; empty when the page has no line positions)."""

    document_id: int
    page_number: int
    chunk_id: int
    quote: str
    regions: list[dict] = field(default_factory=list)
    # The quote's span in the page text (end exclusive), when it was found.
    start: int | None = None
    end: int | None = None

    def as_dict(self) -> dict:
        """The citation as clients receive it (the span stays internal)."""
        data = asdict(self)
        del data["start"], data["end"]
        return data


@dataclass
class Answer:
    """An answer with inline `[Document <id>, Page <n>]` citations."""

    text: str
    citations: list[Citation] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "answer": self.text,
            "citations": [citation.as_dict() for citation in self.citations],
        }

    def to_cache(self) -> dict:
        return {
            "answer": self.text,
            "citations": [asdict(citation) for citation in self.citations],
        }

    @classmethod
    def from_cache(cls, data: dict) -> "Answer":
        return cls(
            text=data["answer"],
            citations=[Citation(**item) for item in data["citations"]],
        )


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
