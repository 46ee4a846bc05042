"""Fixtures for MCP tests: two channels with documents, keys, and a small client
that speaks either era through Django's AsyncClient."""

import base64
import io
import json

import pytest
from asgiref.sync import async_to_sync
from django.core.files.base import ContentFile
from django.test import AsyncClient
from PIL import Image

from documents.access import COMMAND_LINE
from documents.models import Document, Page
from documents.services.keys import create_api_key
from documents.tests.corpus import add_document

MODERN = "2026-07-28"
LEGACY = "2025-11-25"


def png_bytes(colour: str = "red") -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def build_handbook(make):
    """A channel sorted newest first by year, three ready documents, one pending."""
    channel = make(
        "handbook",
        fields=[
            {"name": "topic", "type": "string", "filterable": True},
            {"name": "year", "type": "number", "filterable": True},
            {
                "name": "team",
                "type": "string",
                "sent_with_chunks": True,
            },
        ],
        newest_sort=[{"field": "year", "direction": "desc"}],
        max_pages_per_call=2,
    )
    holidays = add_document(
        channel,
        title="Holiday policy",
        pages=[
            "Employees receive twenty five days of paid holiday each year.",
            "Unused holiday days may be carried over until March.",
            "Public holidays are not counted as holiday days.",
        ],
        metadata={"topic": "holidays", "year": 2024, "team": "people"},
    )
    Page.objects.filter(document=holidays, number=1).first().image.save(
        "page-1.png", ContentFile(png_bytes()), save=True
    )
    add_document(
        channel,
        title="Expense rules",
        pages=["Travel expenses are reimbursed within thirty days of the claim."],
        metadata={"topic": "expenses", "year": 2023, "team": "finance"},
    )
    add_document(
        channel,
        title="Security handbook",
        pages=["Laptops must use full disk encryption and a screen lock."],
        metadata={"topic": "security", "year": 2025, "team": "it"},
    )
    add_document(
        channel,
        title="Draft",
        pages=["Not ready yet."],
        metadata={"topic": "draft", "year": 2026},
        status="pending",
    )
    return channel


def build_papers(make):
    """A channel without newest sort, other fields, and some tools switched off."""
    channel = make(
        "papers",
        fields=[{"name": "journal", "type": "string", "filterable": True}],
        tool_switches={"submit_feedback": False, "rag_search": False},
    )
    add_document(
        channel,
        title="Protein folding",
        pages=["Protein folding is predicted from sequence alone."],
        metadata={"journal": "Nature"},
    )
    return channel


@pytest.fixture
def handbook(make_channel, fake_embedder):
    return build_handbook(make_channel)


@pytest.fixture
def papers(make_channel, fake_embedder):
    return build_papers(make_channel)


@pytest.fixture
def handbook_key(handbook):
    return create_api_key(
        actor=COMMAND_LINE, name="handbook agent", channels=[handbook]
    ).raw_key


@pytest.fixture
def papers_key(papers):
    return create_api_key(
        actor=COMMAND_LINE, name="papers agent", channels=[papers]
    ).raw_key


class McpClient:
    """Posts JSON-RPC messages to one channel in one era; sync wrappers around
    AsyncClient so tests share the test transaction with the view."""

    def __init__(self, slug: str, key: str | None, era: str = "modern"):
        self.path = f"/mcp/{slug}"
        self.key = key
        self.era = era
        self.client = AsyncClient()
        self.next_id = 0

    def headers(self, method: str | None = None, name: str | None = None) -> dict:
        headers = {"Accept": "application/json, text/event-stream"}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        if self.era == "modern":
            headers["MCP-Protocol-Version"] = MODERN
            if method:
                headers["Mcp-Method"] = method
            if name is not None:
                headers["Mcp-Name"] = name
        elif method != "initialize":
            headers["MCP-Protocol-Version"] = LEGACY
        return headers

    def message(self, method: str, params: dict | None = None) -> dict:
        self.next_id += 1
        params = dict(params or {})
        if self.era == "modern":
            params["_meta"] = {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
                **params.get("_meta", {}),
            }
        return {
            "jsonrpc": "2.0",
            "id": self.next_id,
            "method": method,
            "params": params,
        }

    def post(self, body, headers: dict | None = None, **extra):
        data = body if isinstance(body, (bytes, str)) else json.dumps(body)

        async def post():
            response = await self.client.post(
                self.path,
                data=data,
                content_type=extra.pop("content_type", "application/json"),
                headers=headers if headers is not None else self.headers(),
                **extra,
            )
            if response.streaming:  # read SSE in the loop that produces it
                chunks = [chunk async for chunk in response.streaming_content]
                response.stream_body = b"".join(chunks)
            return response

        return async_to_sync(post)()

    def send(self, method: str, params: dict | None = None, **header_overrides):
        params = params or {}
        name = params.get("uri") if method == "resources/read" else params.get("name")
        headers = self.headers(method, name if method in NAMED else None)
        headers.update(header_overrides)
        return self.post(self.message(method, params), headers=headers)

    def result(self, method: str, params: dict | None = None) -> dict:
        response = self.send(method, params)
        assert response.status_code == 200, response.content
        body = json.loads(response.content)
        assert "result" in body, body
        return body["result"]

    def error(self, method: str, params: dict | None = None) -> tuple[int, dict]:
        response = self.send(method, params)
        body = json.loads(response.content)
        assert "error" in body, body
        return response.status_code, body["error"]

    def call_tool(self, name: str, arguments: dict | None = None) -> dict:
        return self.result("tools/call", {"name": name, "arguments": arguments or {}})

    def call_tool_expecting_success(self, name: str, arguments: dict | None = None):
        result = self.call_tool(name, arguments)
        assert not result.get("isError"), result
        return result

    def call_tool_expecting_error(
        self, name: str, arguments: dict | None = None
    ) -> str:
        result = self.call_tool(name, arguments)
        assert result.get("isError") is True, result
        assert "Traceback" not in result["content"][0]["text"]
        return result["content"][0]["text"]

    def read_resource(self, uri: str) -> dict:
        return self.result("resources/read", {"uri": uri})


NAMED = ("tools/call", "resources/read", "prompts/get")


@pytest.fixture
def mcp(handbook, handbook_key):
    """A 2026-07-28 client of the handbook channel."""
    return McpClient("handbook", handbook_key, "modern")


@pytest.fixture
def mcp_legacy(handbook, handbook_key):
    """A handshake-era client of the handbook channel."""
    return McpClient("handbook", handbook_key, "legacy")


@pytest.fixture(params=["modern", "legacy"])
def mcp_any(request, handbook, handbook_key):
    """The handbook channel in each era."""
    return McpClient("handbook", handbook_key, request.param)


def doc_id(title: str) -> int:
    return Document.objects.get(title=title).pk


def decode_png(data: str) -> Image.Image:
    return Image.open(io.BytesIO(base64.b64decode(data)))


@pytest.fixture(scope="package")
def quire_server(django_db_setup, django_db_blocker, tmp_path_factory):
    """A uvicorn server with two workers on the test database, serving the demo
    channel (loaded as `make run` does) and the conformance channel.

    Its rows are committed (the server's workers must see them), so they are
    deleted when this package's tests end, with the audit events and counts
    the server committed: tests elsewhere, in any order, never see them."""
    from django.db import connection
    from django.test import override_settings

    from mcp_endpoint.tests import live

    # Only the test database: a session without django_db tests has none set up.
    assert connection.settings_dict["NAME"].startswith("test_"), "no test database"
    media = tmp_path_factory.mktemp("live-media")
    storages = live.media_storages(media)
    conformance_key = live.new_conformance_key()
    with (
        django_db_blocker.unblock(),
        override_settings(MEDIA_ROOT=media, STORAGES=storages),
    ):
        marks = live.committed_marks()
        demo_slug, demo_key = live.create_live_data(
            conformance_key, media / "admin-password.txt"
        )
    process, base_url = live.start_server(
        live.server_environment(media, conformance_key), workers=2
    )
    try:
        yield live.LiveServer(base_url, demo_slug, demo_key, conformance_key, media)
    finally:
        live.stop_server(process)
        with django_db_blocker.unblock():
            live.delete_live_data(demo_slug, marks)
