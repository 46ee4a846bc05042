"""What every generator returns, and the interface generators implement."""

import re
from dataclasses import asdict, dataclass, field
from typing import Protocol

from documents.search.service import RetrievedChunk

NO_REFERENCES = "\n\nNo references found"
CITATION = re.compile(r"\[Document (\d+), Page (\d+)\]")


def citation_label(document_id: int, page_number: int) -> str:
    """The label get_pages prints for a page, used inline in answers."""
    return f"[Document {document_id}, Page {page_number}]"


@dataclass
class Citation:
    """A source an answer cites: the chunk and the passage it relied on."""

    document_id: int
    page_number: int
    chunk_id: int
    quote: str


@dataclass
class Answer:
    """An answer with inline `[Document <id>, Page <n>]` citations."""

    text: str
    citations: list[Citation] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "answer": self.text,
            "citations": [asdict(citation) for citation in self.citations],
        }

    @classmethod
    def from_dict(cls, data: dict) -> "Answer":
        return cls(
            text=data["answer"],
            citations=[Citation(**item) for item in data["citations"]],
        )


class Generator(Protocol):
    """Writes an answer to `query` from retrieved chunks (best first)."""

    def generate(self, query: str, chunks: list[RetrievedChunk]) -> Answer: ...


def finish(text: str, citations: list[Citation]) -> Answer:
    """The answer as returned: "No references found" appended when nothing is cited."""
    text = text.strip()
    if not citations:
        text += NO_REFERENCES
    return Answer(text=text, citations=citations)


def cited_in(text: str, chunks: list[RetrievedChunk], quote_chars: int = 300):
    """Citations for the labels in `text` that name a retrieved chunk's page, in
    order of first mention; labels naming no retrieved page are not citations."""
    by_page: dict[tuple[int, int], RetrievedChunk] = {}
    for chunk in chunks:
        by_page.setdefault((chunk.document_id, chunk.page_number), chunk)
    citations: list[Citation] = []
    seen: set[tuple[int, int]] = set()
    for match in CITATION.finditer(text):
        key = (int(match.group(1)), int(match.group(2)))
        chunk = by_page.get(key)
        if chunk is None or key in seen:
            continue
        seen.add(key)
        citations.append(
            Citation(
                document_id=chunk.document_id,
                page_number=chunk.page_number,
                chunk_id=chunk.chunk_id,
                quote=chunk.text[:quote_chars].strip(),
            )
        )
    return citations
