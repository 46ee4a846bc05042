"""The REST routes: one router, mounted at /api/ by project.api."""

from typing import Annotated

from django.core.exceptions import ValidationError
from django.core.files.storage import default_storage
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import reverse
from ninja import File, Form, Query, Router, Status
from ninja.errors import HttpError
from ninja.files import UploadedFile

from documents import generation, listing
from documents.access import Scope
from documents.api.auth import (
    admit_request,
    channel_document,
    open_channel,
    page_in_range,
)
from documents.api.schemas import (
    AnswerIn,
    ChannelDetailOut,
    ChannelOut,
    DocumentListQuery,
    DocumentOut,
    FeedbackIn,
    PageOut,
    SearchIn,
    responses,
)
from documents.filters import filter_schema
from documents.ingestion import formats
from documents.limits import TooComplex, max_length, parse_json
from documents.models import Channel, Document, Page
from documents.results import (
    Answer,
    ChunkList,
    DocumentPage,
    FeedbackReceipt,
    provenance_of,
)
from documents.search.service import retrieve_passages
from documents.services import documents as document_services
from documents.services.feedback import submit_feedback
from documents.services.revisions import replace_document_file

router = Router()


def parse_filter(raw: str | None) -> dict | None:
    """A `metadata_filter` query parameter: a JSON object, or empty for none."""
    if raw is None or not raw.strip():
        return None
    try:
        value = parse_json(raw, what="metadata_filter")
    except TooComplex as exc:
        raise HttpError(400, str(exc)) from None
    except ValueError:
        raise HttpError(400, "metadata_filter must be a JSON object.") from None
    if value is not None and not isinstance(value, dict):
        raise HttpError(400, "metadata_filter must be a JSON object.")
    return value


def _channel_out(channel: Channel) -> dict:
    return {
        "slug": channel.slug,
        "name": channel.name,
        "description": channel.description,
        "mcp_path": channel.mcp_path,
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
        "revision": document.revision,
        "revised_at": document.revised_at,
        **provenance_of(document),
        "added_by": _added_by(document),
    }


def _added_by(document: Document) -> str:
    if document.created_by_key_id is not None:
        key = document.created_by_key
        return f"key {key.prefix}… ({key.name})"
    if document.created_by_id is not None:
        return f"user {document.created_by.get_username()}"
    return ""


# Channels


@router.get("/channels", response=responses({200: list[ChannelOut]}), tags=["channels"])
def list_channels(request: HttpRequest):
    """The channels the key opens, by slug."""
    channels = admit_request(request, None).readable_channels()
    channels = channels.prefetch_related("metadata_fields").order_by("slug")
    return [_channel_out(channel) for channel in channels]


@router.get(
    "/channels/{slug}", response=responses({200: ChannelDetailOut}), tags=["channels"]
)
def get_channel(request: HttpRequest, slug: str):
    """One channel: its fields, enabled MCP tools and metadata_filter schema."""
    channel = open_channel(request, slug)
    return {**_channel_out(channel), "metadata_filter_schema": filter_schema(channel)}


# Documents


@router.get(
    "/channels/{slug}/documents",
    response=responses({200: DocumentPage}),
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
    response=responses({200: DocumentOut, 202: DocumentOut}),
    tags=["documents"],
    description=(
        f"Upload a file ({formats.labels()}) with its metadata (a JSON object); "
        "it is stored and queued for ingestion (202, status `pending`). A file "
        "already in the channel (same SHA-256) is not stored again: the answer "
        "is 200 with the document that holds it (re-ingest that one to read it "
        "again). Needs the `write` scope."
    ),
)
def upload_document(
    request: HttpRequest,
    slug: str,
    file: File[UploadedFile],
    metadata: Form[str] = "",
    title: Annotated[str, Form(max_length=max_length(Document, "title"))] = "",
):
    """Store an upload and queue its ingestion (the description above, built
    from the format table, is what the API's documentation shows)."""
    channel = open_channel(request, slug, Scope.WRITE)
    try:
        values = parse_json(metadata, what="metadata") if metadata.strip() else {}
    except TooComplex as exc:
        raise ValidationError(str(exc)) from None
    except ValueError:
        raise ValidationError("metadata must be a JSON object.") from None
    if not isinstance(values, dict):
        raise ValidationError("metadata must be a JSON object.")
    try:
        document = document_services.create_document(
            channel=channel,
            file=file,
            filename=file.name,
            title=title,
            metadata=values,
            content_type=file.content_type,
            actor=request.caller.actor,
        )
    except document_services.DuplicateDocument as duplicate:
        return Status(200, _document_out(duplicate.existing))
    return Status(202, _document_out(document))


@router.get(
    "/channels/{slug}/documents/{document_id}",
    response=responses({200: DocumentOut}),
    tags=["documents"],
)
def get_document(request: HttpRequest, slug: str, document_id: int):
    """A document's metadata and ingestion state."""
    channel = open_channel(request, slug)
    return _document_out(channel_document(channel, document_id))


@router.delete(
    "/channels/{slug}/documents/{document_id}",
    response=responses({204: None}),
    tags=["documents"],
)
def delete_document(request: HttpRequest, slug: str, document_id: int):
    """Delete a document, its pages, chunks and stored files. Needs the
    `write` scope."""
    channel = open_channel(request, slug, Scope.WRITE)
    document_services.delete_document(
        document=channel_document(channel, document_id), actor=request.caller.actor
    )
    return Status(204, None)


@router.post(
    "/channels/{slug}/documents/{document_id}/reingest",
    response=responses({202: DocumentOut}),
    tags=["documents"],
)
def reingest_document(request: HttpRequest, slug: str, document_id: int):
    """Queue the document for ingestion again; a ready document stays searchable
    until the new version replaces it. An ingestion already queued or running
    is not queued again. Needs the `write` scope."""
    channel = open_channel(request, slug, Scope.WRITE)
    document = channel_document(channel, document_id)
    document_services.reingest_document(document=document, actor=request.caller.actor)
    return Status(202, _document_out(document))


@router.put(
    "/channels/{slug}/documents/{document_id}/file",
    response=responses({200: DocumentOut, 202: DocumentOut}),
    tags=["documents"],
)
def replace_file(
    request: HttpRequest, slug: str, document_id: int, file: File[UploadedFile]
):
    """Give the document a new file, its next revision: same id, title,
    metadata and links. The file is checked as an upload is, stored and queued
    (202); the previous revision stays searchable until the new one is read,
    then `revision` and `revised_at` change. A file whose content is already
    the current (or a queued) revision changes nothing (200). Needs the
    `write` scope."""
    channel = open_channel(request, slug, Scope.WRITE)
    document = channel_document(channel, document_id)
    _, created = replace_document_file(
        document=document,
        file=file,
        filename=file.name,
        content_type=file.content_type,
        actor=request.caller.actor,
    )
    return Status(202 if created else 200, _document_out(document))


def _page(channel: Channel, document_id: int, number: int) -> Page:
    document = channel_document(channel, document_id)
    page = None
    if page_in_range(number):
        page = Page.objects.filter(document=document, number=number).first()
    if page is None:
        raise Http404(f"Document {document_id} has no page {number}.")
    return page


@router.get(
    "/channels/{slug}/documents/{document_id}/pages/{number}",
    response=responses({200: PageOut}),
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
    response=responses({200: None}),
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
    "/channels/{slug}/search", response=responses({200: ChunkList}), tags=["search"]
)
def search(request: HttpRequest, slug: str, body: SearchIn):
    """The best passages for a query, as retrieve_text_chunks returns them."""
    channel = open_channel(request, slug)
    chunks = retrieve_passages(
        channel,
        body.query,
        document_ids=body.document_ids,
        metadata_filter=body.metadata_filter,
        limit=body.limit,
    )
    return {"chunks": [chunk.model_dump() for chunk in chunks]}


@router.post(
    "/channels/{slug}/answer",
    response=responses({200: Answer}),
    tags=["search"],
    by_alias=True,  # Answer.text is sent as "answer"
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
    response=responses({201: FeedbackReceipt}),
    tags=["feedback"],
)
def send_feedback(request: HttpRequest, slug: str, body: FeedbackIn):
    """Rate an answer for the channel's administrators."""
    channel = open_channel(request, slug)
    feedback = submit_feedback(
        channel=channel,
        api_key=request.caller.api_key,
        query=body.query,
        answer=body.answer,
        score=body.score,
        comment=body.comment,
    )
    return Status(201, {"feedback_id": feedback.pk})
