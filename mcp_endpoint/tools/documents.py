"""Tools that browse a channel's documents: list, read pages, link to originals."""

import base64
import copy
import json
from typing import Literal

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.files.storage import default_storage
from pydantic import BaseModel, ConfigDict, Field

from documents import listing
from documents.filters import FilterError
from documents.ingestion import formats
from documents.limits import (
    CURSOR_MAX_CHARS,
    LIST_LIMIT_DEFAULT,
    MAX_ID,
    MAX_OFFSET,
    MAX_PAGE,
    DocumentId,
    DocumentIds,
)
from documents.models import Channel, Document, Page
from documents.replicas import replica_read
from documents.results import citation_label, provenance_of, revision_of
from mcp_endpoint import schemas
from mcp_endpoint.citations import citation_url
from mcp_endpoint.protocol.extensions import PAGE_VIEWER_URI
from mcp_endpoint.registry import (
    CallContext,
    Tool,
    ToolError,
    ToolResult,
    text_block,
)


def json_result(data: dict) -> ToolResult:
    """Structured content plus the same JSON as text, for clients that read text."""
    return ToolResult(
        [text_block(json.dumps(data, ensure_ascii=False))], structured=data
    )


class ListDocuments(Tool):
    """List the documents of this collection, a page at a time.

    Returns {total_count, offset, limit, results: [{id, title, file_name,
    format, number_of_pages, revision, revised_at, source, source_url,
    <metadata fields>}]}: file_name and format tell apart documents that share
    a title (one paper as a PDF and as slides); source names
    where the document is synced from (null for an upload), source_url is its
    public web address there when it has one. Use metadata_filter to narrow the
    list and offset/limit to page through it, or pass the nextCursor of a result
    back as cursor for the next page (the result has no nextCursor on the last
    page); the ids work with get_pages, get_citation_url and the document_ids
    argument of the search tools.
    """

    name = "list_documents"
    title = "List documents"
    error_types = (FilterError, listing.BadCursor)

    class Args(BaseModel):
        model_config = ConfigDict(extra="forbid")
        metadata_filter: dict | None = None
        offset: int = Field(
            0, ge=0, le=MAX_OFFSET, description="How many documents to skip."
        )
        limit: int = Field(
            LIST_LIMIT_DEFAULT,
            ge=1,
            le=MAX_ID,
            description="How many documents to return.",
        )
        newest_first: bool = Field(True)
        cursor: str | None = Field(
            None,
            max_length=CURSOR_MAX_CHARS,
            description="The nextCursor of an earlier result: its next page, "
            "with that listing's filter and order (leave out metadata_filter, "
            "offset and newest_first).",
        )

    def description(self, channel: Channel) -> str:
        order = schemas.list_order_description(channel)
        return f"{super().description(channel)}\n\n{order}"

    def input_schema(self, channel: Channel) -> dict:
        schema = super().input_schema(channel)
        properties = schema["properties"]
        properties["metadata_filter"] = schemas.metadata_filter_schema(channel)
        properties["limit"]["maximum"] = schemas.limit_cap()
        properties["limit"]["description"] = (
            f"How many documents to return (at most {schemas.limit_cap()})."
        )
        if channel.newest_sort:
            properties["newest_first"]["description"] = (
                "true: newest documents first (the default); false: oldest first."
            )
        else:
            del properties["newest_first"]
        return schema

    def output_schema(self, channel: Channel) -> dict:
        schema = copy.deepcopy(schemas.list_documents_output_schema(channel))
        schema["properties"]["nextCursor"] = {
            "type": "string",
            "description": "Pass as cursor for the next page; absent on the last.",
        }
        return schema

    async def run(self, args: Args, ctx: CallContext) -> ToolResult:
        page = await sync_to_async(_list_page)(ctx.channel, args)
        return json_result(page)


def _list_page(channel: Channel, args: ListDocuments.Args) -> dict:
    """A list_documents page from the arguments, or from the cursor they carry;
    with the cursor of the page after it."""
    listing_args = {
        "metadata_filter": args.metadata_filter,
        "offset": args.offset,
        "limit": args.limit,
        "newest_first": args.newest_first,
    }
    if args.cursor is not None:
        clashing = sorted(
            {"metadata_filter", "offset", "newest_first"} & args.model_fields_set
        )
        if clashing:
            raise ToolError(
                f"cursor continues an earlier listing; leave out {', '.join(clashing)}."
            )
        listing_args = listing.read_cursor(channel, args.cursor)
        if "limit" in args.model_fields_set:
            listing_args["limit"] = args.limit
    page = listing.list_documents(channel, **listing_args)
    cursor = listing.next_cursor(
        channel,
        page,
        metadata_filter=listing_args["metadata_filter"],
        newest_first=listing_args["newest_first"],
    )
    if cursor is not None:
        page["nextCursor"] = cursor
    return page


def _page_image(page: Page) -> str | None:
    if not page.image:
        return None
    with default_storage.open(page.image.name, "rb") as handle:
        return base64.b64encode(handle.read()).decode("ascii")


def pages_cap(channel: Channel) -> int:
    """Pages one get_pages call may return: the channel's cap, never above the
    server-wide MCP_MAX_PAGES_PER_CALL (an admin typo must not open a huge read)."""
    return min(channel.max_pages_per_call, settings.MCP_MAX_PAGES_PER_CALL)


@replica_read
def _read_pages(
    channel: Channel, document_id: int, start: int, end: int, kind: str
) -> tuple[list[dict], dict]:
    """The pages' content blocks, and what a page viewer needs to show them
    (sent as structuredContent only to clients that render MCP Apps)."""
    if start > end:
        raise ToolError(f"page_start ({start}) is after page_end ({end}).")
    cap = pages_cap(channel)
    if end - start + 1 > cap:
        raise ToolError(
            f"At most {cap} pages per call; you asked for {end - start + 1} "
            f"(pages {start}-{end}). Ask for a smaller range."
        )
    document = (
        Document.objects.for_channel(channel)
        .ready()
        .select_related("source")
        .filter(pk=document_id)
        .first()
    )
    if document is None:
        raise ToolError(
            f"There is no document {document_id} in this collection. "
            "Use list_documents to find document ids."
        )
    pages = list(
        Page.objects.filter(document=document, number__gte=start, number__lte=end)
    )
    last = document.page_count or Page.objects.filter(document=document).count()
    if not pages or end > last:
        raise ToolError(
            f"Document {document_id} has pages 1 to {last}; "
            f"pages {start}-{end} are outside it."
        )
    fitting = _pages_that_fit(document, pages, kind)
    pages, rest = pages[:fitting], pages[fitting:]
    content: list[dict] = []
    for page in pages:
        label = citation_label(document.pk, page.number)
        content.append(text_block(f"{label} (text read by OCR)" if page.ocr else label))
        if kind in ("text", "both"):
            if page.has_text and page.text.strip():
                content.append(text_block(page.text))
            else:
                content.append(
                    text_block(
                        "(No extractable text on this page; ask for type 'image' "
                        "to see it.)"
                    )
                )
        if kind in ("image", "both"):
            image = _page_image(page)
            if image is not None:
                content.append(
                    {"type": "image", "data": image, "mimeType": "image/png"}
                )
            elif kind == "image":
                content.append(text_block("(No image of this page is stored.)"))
    if rest:
        content.append(text_block(_rest_block(document, rest, kind)))
    content.append(text_block(_closing_block(document)))
    view = {
        "document_id": document.pk,
        "title": str(document),
        "revision": document.revision,
        "page_count": last,
        "pages": [page.number for page in pages],
    }
    return content, view


def _closing_block(document: Document) -> str:
    """get_pages' last block: the document's revision and, for a synced
    document, where it comes from, named as list_documents names them."""
    revision = revision_of(document)
    lines = [
        f"(Document {document.pk} is at revision {revision['revision']}, "
        f"revised {revision['revised_at']}.)"
    ]
    # One value a line, so a URL ends where its line does.
    provenance = provenance_of(document)
    if provenance["source"] is not None:
        lines.append(f"source: {provenance['source']}")
    if provenance["source_url"] is not None:
        lines.append(f"source_url: {provenance['source_url']}")
    return "\n".join(lines)


def _page_reply_bytes(page: Page, kind: str) -> int:
    """About how many bytes a page adds to the reply (images travel as base64)."""
    size = len(page.text.encode("utf-8")) if kind in ("text", "both") else 0
    if kind in ("image", "both") and page.image:
        try:
            size += default_storage.size(page.image.name) * 4 // 3
        except OSError:
            pass
    return size + 200


def _pages_that_fit(document: Document, pages: list[Page], kind: str) -> int:
    """How many of `pages` (from the first) fit in MCP_REPLY_MAX_BYTES, judged
    before anything is read; ToolError when not even the first one does."""
    budget = settings.MCP_REPLY_MAX_BYTES
    total, fitting = 0, 0
    for page in pages:
        total += _page_reply_bytes(page, kind)
        if total > budget:
            break
        fitting += 1
    if fitting == 0:
        raise ToolError(
            f"Page {pages[0].number} of document {document.pk} comes to about "
            f"{total / 1e6:.1f} MB with its image; a reply holds at most "
            f"{budget / 1e6:.1f} MB, so not even one page fits with its image. "
            "Ask for type 'text'."
        )
    return fitting


def _rest_block(document: Document, pages: list[Page], kind: str) -> str:
    """What get_pages says when the reply budget cut its range: which pages
    were left out and the call that gets them."""
    first, last = pages[0].number, pages[-1].number
    budget = settings.MCP_REPLY_MAX_BYTES
    left_out = f"page {first}" if first == last else f"pages {first}-{last}"
    return (
        f"({left_out.capitalize()} of document {document.pk} left out: a reply "
        f"holds at most {budget / 1e6:.1f} MB with its images. To read the rest, "
        f"call get_pages with document_id={document.pk}, page_start={first}, "
        f"page_end={last}, type={kind!r}, or type 'text' for their text alone.)"
    )


class GetPages(Tool):
    """Read whole pages of one document, in order: each page's label
    [Document <id>, Page <n>], its text, and its image (PNG) when type is
    "image" or "both"; a last text block gives the document's revision (a
    document given a new file keeps its id and gets the next revision number)
    and, for a document synced from a source, a line "source: <name>" and,
    when it has a public web address there, "source_url: <url>".

    Pages are counted from 1 (list_documents gives number_of_pages). A page
    whose text was read from its image by OCR is marked "(text read by OCR)"
    after its label: its text may contain recognition errors, so check the
    image when a detail matters. Use the label when citing.
    """

    name = "get_pages"
    title = "Get pages"
    ui_resource = PAGE_VIEWER_URI

    class Args(BaseModel):
        model_config = ConfigDict(extra="forbid")
        document_id: DocumentId = Field(description="The document's id.")
        page_start: int = Field(
            ge=1, le=MAX_PAGE, description="First page to return (1-based)."
        )
        page_end: int = Field(
            ge=1, le=MAX_PAGE, description="Last page to return (inclusive)."
        )
        type: Literal["text", "image", "both"] = Field(
            "both",
            description='"text", "image" (rendered page) or "both".',
        )

    def description(self, channel: Channel) -> str:
        return (
            f"{super().description(channel)} At most {pages_cap(channel)} "
            f"pages per call.\n\nPages by format: {formats.page_models()}."
            f"\n\n{schemas.UNTRUSTED_TEXT}"
        )

    def input_schema(self, channel: Channel) -> dict:
        schema = super().input_schema(channel)
        schema["properties"]["page_end"]["description"] = (
            "Last page to return (inclusive); at most "
            f"{pages_cap(channel)} pages from page_start."
        )
        return schema

    async def run(self, args: Args, ctx: CallContext) -> ToolResult:
        content, view = await sync_to_async(_read_pages)(
            ctx.channel, args.document_id, args.page_start, args.page_end, args.type
        )
        return ToolResult(content, structured=view if ctx.apps else None)


def citation_link(ctx: CallContext, document: Document, page: int | None) -> str:
    """A link to the document's original, signed for the caller."""
    return citation_url(document, base_url=ctx.base_url, page=page, caller=ctx.caller)


def _citation_urls(ctx: CallContext, document_ids: list[int], page: int | None) -> dict:
    documents = (
        Document.objects.for_channel(ctx.channel).ready().filter(pk__in=document_ids)
    )
    return {
        str(document.pk): citation_link(ctx, document, page)
        for document in documents.order_by("pk")
    }


class GetCitationUrl(Tool):
    """Links a person can open to see the original files of documents.

    Returns {"<document id>": "<url>"}; ids this collection doesn't have are left
    out. Links expire after a while: fetch fresh ones rather than storing them.
    With page_number, PDF links open at that page (#page=<n>).
    """

    name = "get_citation_url"
    title = "Get citation links"

    class Args(BaseModel):
        model_config = ConfigDict(extra="forbid")
        document_ids: DocumentIds = Field(description="Document ids to link to.")
        page_number: int | None = Field(
            None,
            ge=1,
            le=MAX_PAGE,
            description="Optional page for PDF links to open at.",
        )

    def output_schema(self, channel: Channel) -> dict:
        return copy.deepcopy(schemas.CITATION_URLS_OUTPUT_SCHEMA)

    async def run(self, args: Args, ctx: CallContext) -> ToolResult:
        urls = await sync_to_async(_citation_urls)(
            ctx, args.document_ids, args.page_number
        )
        return json_result(urls)
