"""Limits as settings, each enforced on the server whatever the client sends:
body size (in the view and before Django reads the body), pages per get_pages
(channel cap and global ceiling), results per call, rate limit, chat-model
timeout."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from asgiref.sync import async_to_sync

from documents.generation.chat import ChatGenerator
from documents.models import Channel
from documents.tests.corpus import add_document
from mcp_endpoint.tests.conftest import doc_id
from project.asgi import application

pytestmark = pytest.mark.django_db


def test_body_over_mcp_max_body_bytes_is_refused_by_the_view(mcp, settings):
    """A message longer than MCP_MAX_BODY_BYTES gets 413 and a JSON-RPC error."""
    settings.MCP_MAX_BODY_BYTES = 4096
    message = mcp.message(
        "tools/call",
        {"name": "retrieve_text_chunks", "arguments": {"query": "q" * 5000}},
    )
    response = mcp.post(
        message, headers=mcp.headers("tools/call", "retrieve_text_chunks")
    )
    assert response.status_code == 413
    assert json.loads(response.content)["error"]["message"] == (
        "The body is larger than 4096 bytes."
    )


def _asgi_post(path: str, chunks: list[bytes], headers: list[tuple[bytes, bytes]]):
    """Drive the real ASGI application; returns (status, body, chunks read)."""
    sent: list[dict] = []
    pending = list(chunks)
    read = 0

    async def receive():
        nonlocal read
        if not pending:
            return {"type": "http.disconnect"}
        read += 1
        body = pending.pop(0)
        return {"type": "http.request", "body": body, "more_body": bool(pending)}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1"), *headers],
        "client": ("127.0.0.1", 1234),
        "server": ("127.0.0.1", 8000),
    }
    async_to_sync(application)(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(
        m.get("body", b"") for m in sent if m["type"] == "http.response.body"
    )
    return start["status"], body, read


def test_declared_oversized_body_is_refused_before_it_is_read(settings):
    """A Content-Length over the limit gets 413 from the ASGI guard without one
    byte of the body being read (MCP_MAX_BODY_BYTES on /mcp/, REQUEST_MAX_BYTES
    elsewhere)."""
    settings.MCP_MAX_BODY_BYTES = 2048
    settings.REQUEST_MAX_BYTES = 4096
    length = [(b"content-length", b"10000000"), (b"content-type", b"application/json")]
    status, body, read = _asgi_post("/mcp/handbook", [b"{}"], length)
    assert (status, read) == (413, 0)
    assert json.loads(body)["error"]["code"] == -32004
    status, body, read = _asgi_post("/api/channels/x/documents", [b"x"], length)
    assert (status, read) == (413, 0)
    assert json.loads(body)["detail"] == "The body is larger than 4096 bytes."


def test_streamed_oversized_body_is_cut_off_at_the_limit(settings):
    """A body without Content-Length (chunked) is read only until it passes the
    limit, then refused with 413: the rest is never read."""
    settings.MCP_MAX_BODY_BYTES = 2048
    chunks = [b"x" * 1024] * 100
    status, body, read = _asgi_post(
        "/mcp/handbook", chunks, [(b"content-type", b"application/json")]
    )
    assert status == 413
    assert read == 3
    assert b"larger than 2048 bytes" in body


def test_get_pages_obeys_the_channel_cap(mcp, handbook):
    """More pages than the channel's max_pages_per_call is a tool error naming
    the cap and the count asked."""
    text = mcp.call_tool_expecting_error(
        "get_pages",
        {"document_id": doc_id("Holiday policy"), "page_start": 1, "page_end": 3},
    )
    assert "At most 2 pages per call; you asked for 3" in text


def test_get_pages_global_ceiling_overrides_a_larger_channel_cap(
    mcp, handbook, settings
):
    """MCP_MAX_PAGES_PER_CALL caps even a channel configured for more pages, and
    the schema and description show the effective cap."""
    Channel.objects.filter(pk=handbook.pk).update(max_pages_per_call=10_000)
    settings.MCP_MAX_PAGES_PER_CALL = 1
    text = mcp.call_tool_expecting_error(
        "get_pages",
        {"document_id": doc_id("Holiday policy"), "page_start": 1, "page_end": 2},
    )
    assert "At most 1 pages per call; you asked for 2" in text
    tools = {t["name"]: t for t in mcp.result("tools/list")["tools"]}
    assert "At most 1 pages per call" in tools["get_pages"]["description"]
    page_end = tools["get_pages"]["inputSchema"]["properties"]["page_end"]
    assert "at most 1 pages" in page_end["description"]


def test_retrieve_text_chunks_results_are_capped(mcp, handbook, settings):
    """A limit above MCP_MAX_RESULTS returns at most MCP_MAX_RESULTS chunks."""
    add_document(
        handbook,
        title="Many",
        pages=[[f"holiday rule number {n}" for n in range(12)]],
        metadata={"topic": "many", "year": 2020},
    )
    settings.MCP_MAX_RESULTS = 5
    result = mcp.call_tool_expecting_success(
        "retrieve_text_chunks", {"query": "holiday", "limit": 500}
    )
    assert len(result["structuredContent"]["chunks"]) == 5
    tools = {t["name"]: t for t in mcp.result("tools/list")["tools"]}
    limit = tools["retrieve_text_chunks"]["inputSchema"]["properties"]["limit"]
    assert limit["anyOf"][0]["maximum"] == 5


def test_list_documents_limit_is_capped(mcp, handbook, settings):
    """list_documents never returns more than MCP_LIST_LIMIT_MAX documents."""
    settings.MCP_LIST_LIMIT_MAX = 2
    result = mcp.call_tool_expecting_success("list_documents", {"limit": 1000})
    page = result["structuredContent"]
    assert page["limit"] == 2 and len(page["results"]) == 2
    assert page["total_count"] == 3


def test_rate_limit_is_enforced_per_minute(mcp, settings, steady_rate_window):
    """Past MCP_RATE_LIMIT_PER_MINUTE calls a key gets 429 with Retry-After."""
    settings.MCP_RATE_LIMIT_PER_MINUTE = 2
    statuses = [mcp.send("tools/list").status_code for _ in range(3)]
    assert statuses == [200, 200, 429]


class _SlowModel(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint that never answers in time."""

    def do_POST(self):  # noqa: N802 (http.server API)
        time.sleep(30)

    def log_message(self, *args):
        pass


@pytest.fixture
def slow_model():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SlowModel)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()
    server.server_close()


def test_chat_model_timeout_setting_caps_the_channel_timeout(
    mcp, handbook, slow_model, settings
):
    """CHAT_MODEL_TIMEOUT bounds a channel whose own timeout is much longer:
    the client is built with the smaller timeout, and a model that never
    answers gives an isError rag_search result. (No wall-clock assertion: the
    suite runs on busy machines; the cap is checked on the client itself.)"""
    settings.CHAT_MODEL_TIMEOUT = 1.0
    settings.CHAT_MODEL_ENDPOINTS = {
        "slow": {"base_url": slow_model, "api_key_env": "", "models": []}
    }
    Channel.objects.filter(pk=handbook.pk).update(
        generator_kind=Channel.GeneratorKind.CHAT,
        generator_endpoint="slow",
        generator_model="slow",
        generator_timeout=120,
    )
    handbook.refresh_from_db()
    assert ChatGenerator.for_channel(handbook).model.request_timeout == 1.0
    text = mcp.call_tool_expecting_error("rag_search", {"query": "holiday days"})
    assert "did not answer" in text
