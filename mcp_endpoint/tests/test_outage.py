"""Database outages seen by MCP clients: a short JSON-RPC -32603, never a
traceback or an isError result (the real PostgreSQL restart is
benchmarks/faults/postgres_restart.py)."""

import asyncio
import json

import pytest
from asgiref.sync import async_to_sync
from django.db import OperationalError

from documents.access import pool as admission_pool
from documents.search import service
from documents.tests.test_access_admission_pool import PoolWithoutConnections
from mcp_endpoint import views
from mcp_endpoint.protocol.errors import DATABASE_UNAVAILABLE

pytestmark = pytest.mark.django_db


def test_outage_before_the_message_is_read_is_a_503_to_retry(mcp, monkeypatch):
    """When the key can't be checked because PostgreSQL is down, the answer is
    503 with Retry-After and a -32603 error saying to try again."""

    async def down(*args, **kwargs):
        raise OperationalError("connection to server failed: No such file")

    monkeypatch.setattr(views, "aadmit", down)
    response = mcp.send("tools/list")
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    body = json.loads(response.content)
    assert body["error"] == {"code": -32603, "message": DATABASE_UNAVAILABLE}
    assert b"No such file" not in response.content


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_outage_during_a_tool_call_is_a_json_rpc_error(
    handbook, handbook_key, monkeypatch, era
):
    """A tool whose query fails because the server went away answers with a
    JSON-RPC -32603 error carrying the request id and a short message, not an
    isError result and not the driver's text."""
    from mcp_endpoint.tests.conftest import McpClient

    def down(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(service, "retrieve_passages", down)
    client = McpClient("handbook", handbook_key, era)
    response = client.send(
        "tools/call", {"name": "retrieve_text_chunks", "arguments": {"query": "x"}}
    )
    body = json.loads(response.content)
    assert response.status_code == 200
    assert body["id"] == client.next_id
    assert body["error"] == {"code": -32603, "message": DATABASE_UNAVAILABLE}
    assert b"closed the connection" not in response.content


def test_an_outage_met_by_the_admission_pool_is_answered_at_once(
    handbook, handbook_key, monkeypatch
):
    """Through the whole ASGI application: when the admission's pool has no
    connection (PostgreSQL down), the call is answered 503 / -32603 from that
    one wait; the view does not try Django's connection again."""
    from project.asgi import application

    down = PoolWithoutConnections()

    async def current():
        return down

    monkeypatch.setattr(admission_pool, "current", current)
    second_tries = []

    async def django_path(*args, **kwargs):
        second_tries.append(args)
        raise AssertionError("the outage was tried again")

    monkeypatch.setattr(views, "aadmit", django_path)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/mcp/handbook",
        "raw_path": b"/mcp/handbook",
        "root_path": "",
        "query_string": b"",
        "headers": [
            (b"host", b"testserver"),
            (b"content-type", b"application/json"),
            (b"accept", b"application/json"),
            (b"mcp-protocol-version", b"2025-11-25"),
            (b"authorization", f"Bearer {handbook_key}".encode()),
            (b"content-length", str(len(body)).encode()),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    sent: list[dict] = []
    messages = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive():
        if not messages:  # the client waits for its answer
            await asyncio.sleep(3600)
        return messages.pop(0)

    async def send(message):
        sent.append(message)

    async_to_sync(application)(scope, receive, send)
    assert sent[0]["status"] == 503
    assert (b"retry-after", b"5") in [
        (name.lower(), value) for name, value in sent[0]["headers"]
    ]
    answer = json.loads(b"".join(m.get("body", b"") for m in sent[1:]))
    assert answer["error"] == {"code": -32603, "message": DATABASE_UNAVAILABLE}
    assert down.asked == 1
    assert second_tries == []
