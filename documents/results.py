"""What Quire returns, defined once: a retrieved passage, a citation, an answer,
a row and a page of list_documents, and the `[Document <id>, Page <n>]` label.

The search and generation services build these, the REST API serves them as
its response schemas, and the MCP tools take their output schemas from them
(`output_schema`), so the three can't drift apart.
"""

import re
from typing import Annotated, Any, TypedDict
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

from documents.ingestion import formats


def citation_label(document_id: int, page_number: int) -> str:
    """How a page is cited: get_pages prints it, answers carry it inline."""
    return f"[Document {document_id}, Page {page_number}]"


# A citation label as citation_label writes it (document id, page number).
CITATION = re.compile(r"\[Document (\d+), Page (\d+)\]")


class Region(TypedDict):
    """A box on a page, in fractions of its width and height (origin top left)."""

    x0: float
    y0: float
    x1: float
    y1: float


REGIONS = (
    "Where the text sits on its page, one box per line, in fractions of the "
    "page's width and height (origin top left). Only pages of "
    f"{formats.with_line_positions()} files have them; empty otherwise."
)


# Every field is always sent, defaults included: the schema says so.
ALWAYS_SENT = ConfigDict(json_schema_serialization_defaults_required=True)


class RetrievedChunk(BaseModel):
    """One retrieved passage and what a caller needs to cite it."""

    model_config = ALWAYS_SENT

    chunk_id: int
    document_id: int
    document_title: str
    page_number: int
    text: str
    score: float
    metadata: dict = Field(default_factory=dict)
    regions: list[Region] = Field(default_factory=list, description=REGIONS)
    # The document's revision the chunk belongs to, for citation links; never
    # sent.
    revision: int | None = Field(None, exclude=True)


class ChunkList(BaseModel):
    """retrieve_text_chunks' result (and the REST search's), best first."""

    model_config = ALWAYS_SENT

    chunks: list[RetrievedChunk]


class Citation(BaseModel):
    """A source an answer cites: the page, the chunk and the passage it relied
    on, where that passage is on the page and (over MCP) a link to see it."""

    model_config = ALWAYS_SENT

    document_id: int
    page_number: int
    chunk_id: int | None
    quote: str
    regions: list[Region] = Field(default_factory=list, description=REGIONS)
    url: str | None = Field(
        None,
        description="A page a person can open to check the citation: the page "
        "image with the quoted lines highlighted and the quote beside it. "
        "Expires after a while. (null from the REST API.)",
    )
    # The quote's span in the page text (end exclusive), when it was found;
    # for building links, never sent.
    start: int | None = Field(None, exclude=True)
    end: int | None = Field(None, exclude=True)
    # The cited document's revision, so its link keeps opening that revision.
    revision: int | None = Field(None, exclude=True)

    def public(self) -> dict:
        """As clients receive it (the span stays here)."""
        return self.model_dump()


class Answer(BaseModel):
    """An answer with inline `[Document <id>, Page <n>]` citations."""

    model_config = ConfigDict(
        populate_by_name=True,
        serialize_by_alias=True,
        json_schema_serialization_defaults_required=True,
    )

    text: str = Field(alias="answer")
    citations: list[Citation] = Field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "answer": self.text,
            "citations": [citation.public() for citation in self.citations],
        }

    def to_cache(self) -> dict:
        """Everything, the citations' spans included."""
        return {
            "answer": self.text,
            "citations": [
                {
                    **citation.model_dump(),
                    "start": citation.start,
                    "end": citation.end,
                    "revision": citation.revision,
                }
                for citation in self.citations
            ],
        }

    @classmethod
    def from_cache(cls, data: dict) -> "Answer":
        return cls(
            text=data["answer"],
            citations=[Citation(**item) for item in data["citations"]],
        )


REVISION = (
    "The revision the document serves: 1 for its first file, one more for each "
    "new file it was given (same id, title and metadata)."
)
REVISED_AT = "When that revision was first served (ISO 8601)."


def revision_of(document: Any) -> dict:
    """A document's `revision` and `revised_at` as list_documents, get_pages
    and documents://metadata send them."""
    return {
        "revision": document.revision,
        "revised_at": document.revised_at.isoformat(),
    }


SOURCE = (
    "The name of the channel's source (a folder, bucket or website) the document "
    "is synced from; null for an uploaded document."
)
SOURCE_URL = (
    "Where a person can open the document at its source: a synced web page's "
    "public URL. null when it has none (uploads, folder and bucket entries)."
)
# The schemes a source URL may have to be given out, and linked to: a stored
# value of any other scheme (javascript:, file:, data:) is never sent.
PUBLIC_SCHEMES = frozenset({"http", "https"})

# A URL as clients receive it (CITATION_URLS_OUTPUT_SCHEMA's format too).
Url = Annotated[str, Field(json_schema_extra={"format": "uri"})]


def public_url(url: str) -> str | None:
    """`url` when a browser can open it as a web page (http or https with a
    host), else None."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme.lower() not in PUBLIC_SCHEMES or not parts.hostname:
        return None
    return url


def provenance_of(document: Any) -> dict:
    """A document's `source` (its source's name) and `source_url` (its public
    address there), as every door describes a document: list_documents,
    get_pages, documents://metadata, the REST API and the citation page.
    Both are None for an upload; a document whose source was deleted keeps
    its URL."""
    return {
        "source": document.source.name if document.source_id else None,
        "source_url": public_url(document.source_url),
    }


class DocumentRow(BaseModel):
    """A row of list_documents: id, title, file name and format, pages,
    revision, provenance, then
    the channel's filterable fields (which differ per channel, hence extra
    fields; a channel field named like one of Quire's takes its place)."""

    model_config = ConfigDict(extra="allow")

    id: int
    title: str
    file_name: str = Field(
        description="The name of the uploaded file: tells apart documents that "
        "share a title (a paper as .docx and as .pptx)."
    )
    format: str = Field(description='The file\'s format, e.g. "PDF", "Word (.docx)".')
    number_of_pages: int
    revision: int = Field(description=REVISION)
    revised_at: str = Field(description=REVISED_AT)
    source: str | None = Field(description=SOURCE)
    source_url: Url | None = Field(description=SOURCE_URL)


class DocumentPage(BaseModel):
    """A page of list_documents."""

    total_count: int
    offset: int
    limit: int
    results: list[DocumentRow]


class FeedbackReceipt(BaseModel):
    """What storing a rating answers, over MCP and REST alike."""

    feedback_id: int = Field(description="The stored rating's id.")


def _inline(schema: Any, definitions: dict) -> Any:
    """`schema` with $refs replaced by their definitions and pydantic's titles
    dropped (models read names, not titles)."""
    if isinstance(schema, dict):
        if "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[-1]
            return _inline(definitions[name], definitions)
        return {
            key: (
                {name: _inline(value, definitions) for name, value in item.items()}
                if key == "properties"
                else _inline(item, definitions)
            )
            for key, item in schema.items()
            if key not in ("title", "$defs")
        }
    if isinstance(schema, list):
        return [_inline(item, definitions) for item in schema]
    return schema


def output_schema(model: type[BaseModel]) -> dict:
    """A self-contained JSON schema of `model`'s serialised form (what MCP
    clients get as a tool's outputSchema)."""
    schema = model.model_json_schema(mode="serialization", by_alias=True)
    return _inline(schema, schema.get("$defs", {}))
