"""The peer for benchmarks/mcp_overhead.py: Quire's tools served by FastMCP 4.

    .venv/bin/python -m uvicorn benchmarks.peers.fastmcp_server:app --port 8101

A FastMCP server the way the reference system builds one (stateless Streamable
HTTP, JSON responses), exposing list_documents, retrieve_text_chunks and get_pages
of one channel (PEER_CHANNEL, a slug) by calling Quire's own services on Quire's
database (QUIRE_DATABASE_NAME). Tool schemas come from the function signatures,
fixed at start-up, as FastMCP does. Every request must carry an API key that opens
the channel (checked with Quire's documents.access.admit, as the peer's gateway
would), unless PEER_AUTH=0.
"""

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Literal

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
os.environ.setdefault("QUIRE_DATABASE_NAME", "quire_bench")

import django  # noqa: E402

django.setup()

from asgiref.sync import sync_to_async  # noqa: E402
from django.utils.datastructures import CaseInsensitiveMapping  # noqa: E402
from fastmcp import FastMCP  # noqa: E402
from fastmcp.exceptions import ToolError  # noqa: E402
from mcp.types import ImageContent, TextContent  # noqa: E402
from pydantic import Field  # noqa: E402

from documents import listing  # noqa: E402
from documents.access import AccessDenied, aadmit, credential_from  # noqa: E402
from documents.filters import FilterError  # noqa: E402
from documents.models import Channel  # noqa: E402
from documents.search import service  # noqa: E402
from mcp_endpoint.registry import ToolError as QuireToolError  # noqa: E402
from mcp_endpoint.tools.documents import _read_pages  # noqa: E402

CHANNEL_SLUG = os.environ.get("PEER_CHANNEL", "perf-mcp")
CHECK_KEYS = os.environ.get("PEER_AUTH", "1") != "0"
READ_ONLY = {"readOnlyHint": True, "destructiveHint": False}

mcp = FastMCP("quire-peer")


async def _channel() -> Channel:
    return await Channel.objects.aget(slug=CHANNEL_SLUG)


@mcp.tool(annotations=READ_ONLY)
async def list_documents(
    metadata_filter: dict | None = None,
    offset: Annotated[int, Field(ge=0)] = 0,
    limit: Annotated[int, Field(ge=1, le=100)] = 25,
    newest_first: bool = True,
) -> dict:
    """List the documents of this collection, a page at a time."""
    try:
        return await sync_to_async(listing.list_documents)(
            await _channel(),
            metadata_filter=metadata_filter,
            offset=offset,
            limit=limit,
            newest_first=newest_first,
        )
    except FilterError as exc:
        raise ToolError(str(exc)) from None


@mcp.tool(annotations=READ_ONLY)
async def retrieve_text_chunks(
    query: Annotated[str, Field(min_length=1)],
    document_ids: list[int] | None = None,
    metadata_filter: dict | None = None,
    limit: Annotated[int | None, Field(ge=1)] = None,
) -> dict:
    """Find the passages of this collection that best match a query."""
    try:
        chunks = await sync_to_async(service.retrieve_chunks)(
            await _channel(),
            query,
            document_ids=document_ids,
            metadata_filter=metadata_filter,
            limit=limit,
        )
    except FilterError as exc:
        raise ToolError(str(exc)) from None
    return {"chunks": [chunk.__dict__ for chunk in chunks]}


@mcp.tool(annotations=READ_ONLY)
async def get_pages(
    document_id: Annotated[int, Field(ge=1)],
    page_start: Annotated[int, Field(ge=1)],
    page_end: Annotated[int, Field(ge=1)],
    type: Literal["text", "image", "both"] = "both",
) -> list[TextContent | ImageContent]:
    """Read whole pages of one document, in order."""
    channel = await _channel()
    try:
        blocks, _view = await sync_to_async(_read_pages)(
            channel, document_id, page_start, page_end, type
        )
    except QuireToolError as exc:
        raise ToolError(str(exc)) from None
    return [
        TextContent(type="text", text=block["text"])
        if block["type"] == "text"
        else ImageContent(type="image", data=block["data"], mimeType="image/png")
        for block in blocks
    ]


_mcp_app = mcp.http_app(path="/mcp", stateless_http=True, json_response=True)


async def _refuse(send, status: int, message: str) -> None:
    error = {"code": -32001, "message": message}
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": body})


class _Headers:
    """Just enough of HttpRequest for documents.access.credential_from."""

    def __init__(self, scope: dict):
        self.headers = CaseInsensitiveMapping(
            {
                name.decode("latin-1"): value.decode("latin-1")
                for name, value in scope["headers"]
            }
        )


async def app(scope, receive, send):
    """The FastMCP app behind an API-key check on each HTTP request."""
    if CHECK_KEYS and scope["type"] == "http":
        try:
            await aadmit(CHANNEL_SLUG, credential_from(_Headers(scope)), via="mcp")
        except AccessDenied as exc:
            await _refuse(send, exc.status, str(exc))
            return
    await _mcp_app(scope, receive, send)
