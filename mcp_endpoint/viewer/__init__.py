"""The page viewer, an MCP App (SEP-1865): a `ui://` HTML view that hosts
rendering Apps show beside get_pages and rag_search results, and the app-only
tool it reads pages through.

The view is one self-contained HTML file (page-viewer.html: its script and
styles inline, images as `data:` URLs), so the host's default CSP is enough
and `_meta.ui.csp` declares no domain at all. What it shows of a page comes
from `page_view()`, the data the web citation page renders (citations.
cited_page): the page image with the quoted lines' boxes, or the page text
with the quote marked.
"""

import base64
import re
from functools import cache
from pathlib import Path

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.files.storage import default_storage
from pydantic import BaseModel, ConfigDict, Field

from documents.limits import MAX_PAGE, DocumentId
from documents.models import Channel
from documents.pageview import render_page_html
from mcp_endpoint import citations
from mcp_endpoint.protocol.extensions import APP_MIME_TYPE, PAGE_VIEWER_URI
from mcp_endpoint.registry import (
    CallContext,
    Resource,
    Tool,
    ToolError,
    ToolResult,
    registry,
    text_block,
)
from mcp_endpoint.tools.documents import GetPages, citation_link

HTML_PATH = Path(__file__).with_name("page-viewer.html")
QUOTE_MAX_CHARS = 2000
# No network and no outside resources: everything the view needs is inline.
UI_META = {"csp": {"connectDomains": [], "resourceDomains": []}, "prefersBorder": True}


@cache
def viewer_html() -> str:
    return HTML_PATH.read_text(encoding="utf-8")


def _quote_span(text: str, quote: str | None) -> tuple[int, int] | None:
    """Where `quote` sits in the page text, matching any run of whitespace
    between its words (answers quote sentences with their line breaks folded)."""
    words = (quote or "").split()
    if not words:
        return None
    match = re.search(r"\s+".join(re.escape(word) for word in words), text)
    return (match.start(), match.end()) if match else None


def _image_data(image) -> str | None:
    """The page image as base64, when it fits in a reply (else None)."""
    if not image:
        return None
    try:
        if default_storage.size(image.name) * 4 // 3 > settings.MCP_REPLY_MAX_BYTES:
            return None
        with default_storage.open(image.name, "rb") as handle:
            return base64.b64encode(handle.read()).decode("ascii")
    except OSError:
        return None


def page_view(
    ctx: CallContext, document_id: int, page_number: int, quote: str | None
) -> dict | None:
    """What the viewer shows of one page of the channel's document: title,
    page, revision, the image with the quote's boxes (thousandths of the page)
    or the text split around the quote, and a signed link to the original.
    None when the channel has no such ready document or page.

    The one place the viewer's page data comes from: it is the citation
    page's (citations.cited_page), so both show a page alike."""
    page = citations.cited_page(
        citations.CitationTarget(document_id, ctx.channel.pk, page_number)
    )
    if page is None:
        return None
    span = _quote_span(page.page.text or "", quote)
    if span is not None:
        page = citations.cited_page(
            citations.CitationTarget(
                document_id, ctx.channel.pk, page_number, span[0], span[1]
            )
        )
    document = page.document
    image = _image_data(page.page.image)
    text = page.page.text or ""
    start, end = page.span or (0, 0)
    return {
        "document_id": document.pk,
        "title": str(document),
        "page_number": page.page.number,
        "page_count": document.page_count or page.page.number,
        "revision": page.revision,
        "view": "image" if image is not None else "text",
        "image": {"mimeType": "image/png", "data": image} if image else None,
        "marks": [
            {key: float(value) for key, value in mark.items()} for mark in page.marks
        ],
        # The page as the citation page shows it (documents.pageview: headings,
        # lists, tables; sanitised, the quote marked in place).
        "html": None
        if image is not None
        else str(
            render_page_html(
                page.page,
                [(start, end)] if end > start else [],
                content_type=document.content_type,
                mark_id="",
            )
        ),
        "text": {
            "before": text[:start],
            "quoted": text[start:end],
            "after": text[end:],
        },
        "quote": page.quote,
        "original_url": citation_link(ctx, document, page.page.number),
    }


class ShowPage(Tool):
    """One page of a document for the page viewer: its image with the quoted
    lines highlighted (or its text with the quote marked), title, page count
    and revision, and a link to the original. Called by the viewer, not by
    the model."""

    name = "show_page"
    title = "Show a page in the viewer"
    ui_resource = PAGE_VIEWER_URI
    ui_visibility = ("app",)
    # Pages are what get_pages serves: its switch turns this off too (no
    # switch of its own, so the channel's tool list, which names the model's
    # tools, never shows it).
    switchable = False

    def enabled_for(self, channel: Channel) -> bool:
        return GetPages().enabled_for(channel)

    class Args(BaseModel):
        model_config = ConfigDict(extra="forbid")
        document_id: DocumentId = Field(description="The document's id.")
        page_number: int = Field(ge=1, le=MAX_PAGE, description="The page (1-based).")
        quote: str | None = Field(
            None,
            max_length=QUOTE_MAX_CHARS,
            description="Text on the page to highlight (a citation's quote).",
        )

    async def run(self, args: Args, ctx: CallContext) -> ToolResult:
        view = await sync_to_async(page_view)(
            ctx, args.document_id, args.page_number, args.quote
        )
        if view is None:
            raise ToolError(
                f"Page {args.page_number} of document {args.document_id} is not in "
                "this collection."
            )
        label = f"[Document {view['document_id']}, Page {view['page_number']}]"
        summary = f"{label} of {view['title']!r}, revision {view['revision']}."
        return ToolResult([text_block(summary)], structured=view)


class PageViewer(Resource):
    """The page viewer (an MCP App): shows the page a get_pages or rag_search
    result cites, with the quoted passage highlighted."""

    uri = PAGE_VIEWER_URI
    name = "page_viewer"
    title = "Page viewer"
    mime_type = APP_MIME_TYPE
    for_apps = True

    def definition(self, channel: Channel) -> dict:
        return {**super().definition(channel), "_meta": {"ui": UI_META}}

    async def read(self, uri: str, ctx: CallContext) -> list[dict]:
        return [
            {
                "uri": self.uri,
                "mimeType": self.mime_type,
                "text": viewer_html(),
                "_meta": {"ui": UI_META},
            }
        ]


registry.register(ShowPage())
registry.register(PageViewer())
