"""Request (`XIn`) and response (`XOut`) schemas of the REST API. The result
shapes (passages, answers, document rows) are documents.results', shared with
the services and the MCP tools."""

from datetime import datetime
from typing import Annotated

from ninja import Field, Schema
from pydantic import AfterValidator

from documents.limits import (
    LIST_LIMIT_DEFAULT,
    MAX_ID,
    MAX_OFFSET,
    DocumentIds,
    FeedbackAnswer,
    FeedbackComment,
    FeedbackQuery,
    Query,
    Score,
    check_depth,
)
from documents.results import SOURCE, SOURCE_URL, Url

# A filter checked against JSON_MAX_DEPTH.
Filter = Annotated[
    dict | None, AfterValidator(lambda value: check_depth(value, what="The filter"))
]

# Every operation documents these as problem details (see project.api).
PROBLEM_CODES = frozenset({400, 401, 403, 404, 422, 429})


class ProblemOut(Schema):
    type: str
    title: str
    status: int
    detail: str
    errors: list[dict] | None = None
    missing_scope: str | None = None


class MetadataFieldOut(Schema):
    name: str
    type: str
    description: str
    required: bool
    filterable: bool


class ChannelOut(Schema):
    slug: str
    name: str
    description: str
    mcp_path: str
    tools: list[str]
    fields: list[MetadataFieldOut]


class ChannelDetailOut(ChannelOut):
    metadata_filter_schema: dict = Field(
        description="JSON schema of metadata_filter for this channel."
    )


class DocumentOut(Schema):
    id: int
    title: str
    filename: str
    content_type: str
    size: int
    status: str
    status_reason: str
    page_count: int
    chunk_count: int
    metadata: dict
    created_at: datetime
    ingested_at: datetime | None
    revision: int = Field(
        description="The number of the file it serves: 1 for the upload, one "
        "more for each new file given (PUT .../file)."
    )
    revised_at: datetime = Field(description="When that revision was first served.")
    source: str | None = Field(description=SOURCE)
    source_url: Url | None = Field(description=SOURCE_URL)
    added_by: str = Field(description="The key or user that uploaded it, if any.")


class DocumentListQuery(Schema):
    metadata_filter: str | None = Field(
        None, description='JSON object, e.g. {"kind": "guide"}; see the channel.'
    )
    offset: int = Field(0, ge=0, le=MAX_OFFSET)
    limit: int = Field(
        LIST_LIMIT_DEFAULT,
        ge=1,
        le=MAX_ID,
        description="Capped at MCP_LIST_LIMIT_MAX.",
    )
    newest_first: bool = True


class PageOut(Schema):
    document_id: int
    number: int
    text: str
    has_text: bool
    image_url: str | None


class SearchIn(Schema):
    query: Query
    document_ids: DocumentIds | None = Field(
        None, description="Search only these documents; metadata_filter is ignored."
    )
    metadata_filter: Filter = None
    limit: int | None = Field(
        None, ge=1, le=MAX_ID, description="Capped at MCP_MAX_RESULTS."
    )


class AnswerIn(Schema):
    query: Query
    document_ids: DocumentIds | None = None
    metadata_filter: Filter = None


class FeedbackIn(Schema):
    query: FeedbackQuery
    answer: FeedbackAnswer
    score: Score
    comment: FeedbackComment = ""


def responses(ok: dict) -> dict:
    """An operation's responses: `ok` plus the problem-details codes."""
    return {**ok, **dict.fromkeys(PROBLEM_CODES, ProblemOut)}
