"""What `make run` prints while a client works: one line per MCP call and no
WARNING, the 405 a stateless server answers to GET and DELETE included."""

import asyncio
import re
import time

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from demo.tests.test_runquire import Launch
from mcp_endpoint.tests import live
from mcp_endpoint.tests.conformance_fixtures import CONFORMANCE_SLUG

CALL_LINE = re.compile(
    r"INFO mcp_endpoint mcp method=(\S+) tool=(\S+) channel=(\S+) status=(\d+) "
    r"outcome=.+ ms=[\d.]+ caller=(\S+)"
)


async def a_clients_session(url: str, key: str) -> None:
    """Discovery (or initialize, by era), tools/list, two calls, then the GET
    (listening for server messages) and DELETE (ending a session) that clients
    send."""
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            await client.list_tools()
            await client.call_tool("list_documents", {})
            await client.call_tool("rag_search", {"query": "anything"})
        for method in ("GET", "DELETE"):
            answer = await http.request(
                method, url, headers={"Accept": "text/event-stream"}
            )
            assert answer.status_code == 405


@pytest.mark.slow
def test_a_clients_normal_use_writes_one_line_per_call_and_no_warning(
    transactional_db, tmp_path
):
    """runquire as `make run` starts it, a real MCP client's session (with the
    GET and DELETE clients send): each call is one line naming method, tool,
    channel, status, milliseconds and the key's prefix; no WARNING line; and
    no access-log line repeats an MCP request."""
    key = live.new_conformance_key()
    live.ensure_conformance_channel(key)
    env = {
        **live.server_environment(tmp_path / "media", key),
        "INGEST_WORKERS": "2",  # what Launch waits for, as `make run` starts
    }
    launched = Launch(env)
    try:
        launched.wait_until_ready()
        started = len(launched.lines)
        asyncio.run(
            a_clients_session(
                f"http://127.0.0.1:{launched.port}/mcp/{CONFORMANCE_SLUG}", key
            )
        )
        time.sleep(1)  # the last lines reach the pipe
        during = launched.lines[started:]
    finally:
        launched.process.terminate()
        launched.finish()
    assert not [line for line in during if "WARNING" in line], during
    calls = [CALL_LINE.search(line) for line in during]
    calls = [match.groups() for match in calls if match]
    methods = [(method, tool) for method, tool, *_ in calls]
    assert methods.count(("tools/call", "list_documents")) == 1, during
    assert methods.count(("tools/call", "rag_search")) == 1, during
    assert methods.count(("tools/list", "-")) == 1, during
    assert methods[0] in {("initialize", "-"), ("server/discover", "-")}
    assert all(c[2] == CONFORMANCE_SLUG for c in calls)
    assert all(c[4] == key[:10] for c in calls if c[3] != "405")
    assert [c[3] for c in calls].count("405") == 2
    # Nothing else for the MCP requests: no access log line beside the call's.
    assert not [line for line in during if f"/mcp/{CONFORMANCE_SLUG}" in line], during
