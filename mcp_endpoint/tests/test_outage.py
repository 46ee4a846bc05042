"""Database outages seen by MCP clients: a short JSON-RPC -32603, never a
traceback or an isError result (the real PostgreSQL restart is
benchmarks/faults/postgres_restart.py)."""

import json

import pytest
from django.db import OperationalError

from documents.search import service
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

    monkeypatch.setattr(service, "retrieve_chunks", down)
    client = McpClient("handbook", handbook_key, era)
    response = client.send(
        "tools/call", {"name": "retrieve_text_chunks", "arguments": {"query": "x"}}
    )
    body = json.loads(response.content)
    assert response.status_code == 200
    assert body["id"] == client.next_id
    assert body["error"] == {"code": -32603, "message": DATABASE_UNAVAILABLE}
    assert b"closed the connection" not in response.content
