"""REST routes for channels, documents, search, answers and feedback.

Each view parses its input, calls one service or queryset method, and returns a
`...Out` schema; errors are raised as the services' own exceptions and turned
into problem details by project.api.
"""

import json
from dataclasses import asdict
from datetime import datetime

from django.core.exceptions import ValidationError
from django.core.files.storage import default_storage
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import reverse
from ninja import Field, File, Form, Query, Router, Schema, Status
from ninja.errors import HttpError
from ninja.files import UploadedFile
from ninja.security import APIKeyHeader, HttpBearer
from pydantic import BaseModel, ConfigDict

from documents import generation, listing
from documents.filters import filter_schema
from documents.models import Channel, Document, Page
from documents.search.service import retrieve_chunks
from documents.services import documents as document_services
from documents.services.keys import KeyRejected, authenticate_api_key, digest_key
from mcp_endpoint.ratelimit import hit_rate_limit
from mcp_endpoint.services import submit_feedback

router = Router()

PROBLEM_CODES = frozenset({400, 401, 403, 404, 422, 429})


class RateLimited(Exception):
    """The key used up its requests for this minute (shared with MCP calls)."""

    def __init__(self, retry_after: int):
        super().__init__(f"Rate limit reached; retry in {retry_after} s.")
        self.retry_after = retry_after


# Authentication: both schemes hand the raw key on; every view then checks it
# against the channel it names with authenticate_api_key.


class BearerKey(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> str | None:
        return token.strip() or None


class ApiKeyHeader(APIKeyHeader):
    param_name = "api-key"

    def authenticate(self, request: HttpRequest, key: str | None) -> str | None:
        return (key or "").strip() or None


def open_channel(request: HttpRequest, slug: str) -> Channel:
    """The channel `slug`, if the request's key opens it (else 404/401/403) and
    has requests left this minute (else 429)."""
    channel = Channel.objects.filter(slug=slug).first()
    if channel is None:
        raise Http404(f"There is no channel {slug!r}.")
    request.api_key = authenticate_api_key(request.auth, channel=channel)
    retry_after = hit_rate_limit(api_key_id=request.api_key.pk)
    if retry_after is not None:
        raise RateLimited(retry_after)
    return channel


def channel_document(channel: Channel, document_id: int) -> Document:
    document = Document.objects.for_channel(channel).filter(pk=document_id).first()
    if document is None:
        raise Http404(f"Channel {channel.slug!r} has no document {document_id}.")
    return document


def parse_filter(raw: str | None) -> dict | None:
    """A `metadata_filter` query parameter: a JSON object, or empty for none."""
    if raw is None or not raw.strip():
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        raise HttpError(400, "metadata_filter must be a JSON object.") from None
    if value is not None and not isinstance(value, dict):
        raise HttpError(400, "metadata_filter must be a JSON object.")
    return value


# Schemas


class ProblemOut(Schema):
    type: str
    title: str
    status: int
    detail: str
    errors: list[dict] | None = None


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


class DocumentSummaryOut(BaseModel):
    """A row of list_documents: id, title, pages, then the filterable fields."""

    # A plain pydantic model: ninja's Schema would drop the channel's own fields.
    model_config = ConfigDict(extra="allow")
    id: int
    title: str
    number_of_pages: int


class DocumentListOut(Schema):
    total_count: int
    offset: int
    limit: int
    results: list[DocumentSummaryOut]


class DocumentListQuery(Schema):
    metadata_filter: str | None = Field(
        None, description='JSON object, e.g. {"kind": "guide"}; see the channel.'
    )
    offset: int = Field(0, ge=0)
    limit: int = Field(25, ge=1, description="Capped at MCP_LIST_LIMIT_MAX.")
    newest_first: bool = True


class PageOut(Schema):
    document_id: int
    number: int
    text: str
    has_text: bool
    image_url: str | None


class SearchIn(Schema):
    query: str = Field(min_length=1)
    document_ids: list[int] | None = Field(
        None, description="Search only these documents; metadata_filter is ignored."
    )
    metadata_filter: dict | None = None
    limit: int | None = Field(None, ge=1, description="Capped at MCP_MAX_RESULTS.")


class ChunkOut(Schema):
    chunk_id: int
    document_id: int
    document_title: str
    page_number: int
    text: str
    score: float
    metadata: dict


class SearchOut(Schema):
    chunks: list[ChunkOut]


class AnswerIn(Schema):
    query: str = Field(min_length=1)
    document_ids: list[int] | None = None
    metadata_filter: dict | None = None


class CitationOut(Schema):
    document_id: int
    page_number: int
    chunk_id: int
    quote: str


class AnswerOut(Schema):
    answer: str
    citations: list[CitationOut]


class FeedbackIn(Schema):
    query: str = Field(min_length=1)
    answer: str = Field(min_length=1)
    score: int = Field(ge=1, le=5, description="1 (useless) to 5 (excellent).")
    comment: str = Field("", max_length=5000)


class FeedbackOut(Schema):
    id: int


def _responses(ok: dict) -> dict:
    return {**ok, **dict.fromkeys(PROBLEM_CODES, ProblemOut)}


def _channel_out(channel: Channel) -> dict:
    return {
        "slug": channel.slug,
        "name": channel.name,
        "description": channel.description,
        "mcp_path": reverse("mcp", args=[channel.slug]),
        "tools": channel.enabled_tools(),
        "fields": list(channel.metadata_fields.all()),
    }


def _document_out(document: Document) -> dict:
    return {
        "id": document.pk,
        "title": document.title or document.original_filename,
        "filename": document.original_filename,
        "content_type": document.content_type,
        "size": document.size,
        "status": document.status,
        "status_reason": document.status_reason,
        "page_count": document.page_count,
        "chunk_count": document.chunk_count,
        "metadata": document.metadata,
        "created_at": document.created_at,
        "ingested_at": document.ingested_at,
    }


# Channels


@router.get(
    "/channels", response=_responses({200: list[ChannelOut]}), tags=["channels"]
)
def list_channels(request: HttpRequest):
    """The channels the key opens, by slug."""
    channels = list(
        Channel.objects.filter(api_keys__digest=digest_key(request.auth))
        .prefetch_related("metadata_fields")
        .order_by("slug")
    )
    if not channels:
        raise KeyRejected("Unknown API key.", status=401)
    # Revoked or expired keys are refused here, exactly as for one channel.
    authenticate_api_key(request.auth, channel=channels[0])
    return [_channel_out(channel) for channel in channels]


@router.get(
    "/channels/{slug}", response=_responses({200: ChannelDetailOut}), tags=["channels"]
)
def get_channel(request: HttpRequest, slug: str):
    """One channel: its fields, enabled MCP tools and metadata_filter schema."""
    channel = open_channel(request, slug)
    return {**_channel_out(channel), "metadata_filter_schema": filter_schema(channel)}


# Documents


@router.get(
    "/channels/{slug}/documents",
    response=_responses({200: DocumentListOut}),
    tags=["documents"],
)
def list_channel_documents(
    request: HttpRequest, slug: str, params: Query[DocumentListQuery]
):
    """A page of the channel's ready documents, as list_documents returns it."""
    channel = open_channel(request, slug)
    return listing.list_documents(
        channel,
        metadata_filter=parse_filter(params.metadata_filter),
        offset=params.offset,
        limit=params.limit,
        newest_first=params.newest_first,
    )


@router.post(
    "/channels/{slug}/documents",
    response=_responses({202: DocumentOut}),
    tags=["documents"],
)
def upload_document(
    request: HttpRequest,
    slug: str,
    file: File[UploadedFile],
    metadata: Form[str] = "",
    title: Form[str] = "",
):
    """Upload a PDF, Markdown or text file with its metadata (a JSON object);
    it is stored and queued for ingestion (status `pending`)."""
    channel = open_channel(request, slug)
    try:
        values = json.loads(metadata) if metadata.strip() else {}
    except ValueError:
        raise ValidationError("metadata must be a JSON object.") from None
    if not isinstance(values, dict):
        raise ValidationError("metadata must be a JSON object.")
    document = document_services.create_document(
        channel=channel,
        file=file,
        filename=file.name,
        title=title,
        metadata=values,
        content_type=file.content_type,
    )
    return Status(202, _document_out(document))


@router.get(
    "/channels/{slug}/documents/{document_id}",
    response=_responses({200: DocumentOut}),
    tags=["documents"],
)
def get_document(request: HttpRequest, slug: str, document_id: int):
    """A document's metadata and ingestion state."""
    channel = open_channel(request, slug)
    return _document_out(channel_document(channel, document_id))


@router.delete(
    "/channels/{slug}/documents/{document_id}",
    response=_responses({204: None}),
    tags=["documents"],
)
def delete_document(request: HttpRequest, slug: str, document_id: int):
    """Delete a document, its pages, chunks and stored files."""
    channel = open_channel(request, slug)
    document_services.delete_document(document=channel_document(channel, document_id))
    return Status(204, None)


@router.post(
    "/channels/{slug}/documents/{document_id}/reingest",
    response=_responses({202: DocumentOut}),
    tags=["documents"],
)
def reingest_document(request: HttpRequest, slug: str, document_id: int):
    """Queue the document for ingestion again; a ready document stays searchable
    until the new version replaces it."""
    channel = open_channel(request, slug)
    document = channel_document(channel, document_id)
    document_services.reingest_document(document=document)
    return Status(202, _document_out(document))


def _page(channel: Channel, document_id: int, number: int) -> Page:
    page = (
        Page.objects.filter(document=channel_document(channel, document_id))
        .filter(number=number)
        .first()
    )
    if page is None:
        raise Http404(f"Document {document_id} has no page {number}.")
    return page


@router.get(
    "/channels/{slug}/documents/{document_id}/pages/{number}",
    response=_responses({200: PageOut}),
    tags=["documents"],
)
def get_page(request: HttpRequest, slug: str, document_id: int, number: int):
    """A page's extracted text (pages count from 1) and the link to its image."""
    channel = open_channel(request, slug)
    page = _page(channel, document_id, number)
    image_url = (
        reverse("api:get_page_image", args=[slug, document_id, number])
        if page.image
        else None
    )
    return {
        "document_id": document_id,
        "number": page.number,
        "text": page.text,
        "has_text": page.has_text,
        "image_url": image_url,
    }


@router.get(
    "/channels/{slug}/documents/{document_id}/pages/{number}/image",
    response=_responses({200: None}),
    tags=["documents"],
    openapi_extra={
        "responses": {
            200: {
                "description": "The rendered page (PNG).",
                "content": {
                    "image/png": {"schema": {"type": "string", "format": "binary"}}
                },
            }
        }
    },
)
def get_page_image(request: HttpRequest, slug: str, document_id: int, number: int):
    """The rendered page image (PDF pages only)."""
    channel = open_channel(request, slug)
    page = _page(channel, document_id, number)
    if not page.image:
        raise Http404(f"Page {number} of document {document_id} has no image.")
    with default_storage.open(page.image.name, "rb") as handle:
        return HttpResponse(handle.read(), content_type="image/png")


# Search, answers, feedback


@router.post(
    "/channels/{slug}/search", response=_responses({200: SearchOut}), tags=["search"]
)
def search(request: HttpRequest, slug: str, body: SearchIn):
    """The best passages for a query, as retrieve_text_chunks returns them."""
    channel = open_channel(request, slug)
    chunks = retrieve_chunks(
        channel,
        body.query,
        document_ids=body.document_ids,
        metadata_filter=body.metadata_filter,
        limit=body.limit,
    )
    return {"chunks": [asdict(chunk) for chunk in chunks]}


@router.post(
    "/channels/{slug}/answer", response=_responses({200: AnswerOut}), tags=["search"]
)
def answer(request: HttpRequest, slug: str, body: AnswerIn):
    """An answer citing its sources inline as [Document <id>, Page <n>]."""
    channel = open_channel(request, slug)
    result = generation.answer_question(
        channel,
        body.query,
        document_ids=body.document_ids,
        metadata_filter=body.metadata_filter,
    )
    return result.as_dict()


@router.post(
    "/channels/{slug}/feedback",
    response=_responses({201: FeedbackOut}),
    tags=["feedback"],
)
def send_feedback(request: HttpRequest, slug: str, body: FeedbackIn):
    """Rate an answer for the channel's administrators."""
    channel = open_channel(request, slug)
    feedback = submit_feedback(
        channel=channel,
        api_key=request.api_key,
        query=body.query,
        answer=body.answer,
        score=body.score,
        comment=body.comment,
    )
    return Status(201, {"id": feedback.pk})
