"""SSE answers, log levels, client capabilities and Mcp-Param headers, with
conformance fixture tools registered for the handbook channel for one test."""

import base64
import json

import pytest

from documents.access import COMMAND_LINE
from mcp_endpoint.registry import registry
from mcp_endpoint.tests import conformance_fixtures

pytestmark = pytest.mark.django_db


@pytest.fixture
def fixtures_in_handbook(handbook):
    items = conformance_fixtures.fixtures()
    for item in items:
        registry.register(item, channel_slugs=["handbook"])
    yield
    for item in items:
        registry.unregister(item)


def read_stream(response) -> list[dict]:
    frames = response.stream_body.decode().split("\n\n")
    return [
        json.loads(frame.split("data: ", 1)[1]) for frame in frames if "data: " in frame
    ]


def call(client, name, arguments=None, meta=None, **headers):
    params = {"name": name, "arguments": arguments or {}}
    if meta:
        params["_meta"] = meta
    return client.send("tools/call", params, **headers)


def test_progress_streams_as_sse_then_the_result(mcp_any, fixtures_in_handbook):
    """With a progress token and SSE accepted, progress notifications come first
    and the response last, on text/event-stream."""
    response = call(mcp_any, "test_tool_with_progress", meta={"progressToken": "p1"})
    assert response["Content-Type"] == "text/event-stream"
    assert response["Cache-Control"] == "no-cache"
    messages = read_stream(response)
    progress = [m["params"]["progress"] for m in messages[:-1]]
    assert progress == [0, 50, 100]
    assert all(m["params"]["progressToken"] == "p1" for m in messages[:-1])
    assert messages[-1]["result"]["content"][0]["text"] == "p1"


def test_json_only_client_gets_json_without_notifications(mcp, fixtures_in_handbook):
    """A client that doesn't accept SSE gets one JSON response."""
    response = call(
        mcp,
        "test_tool_with_progress",
        meta={"progressToken": "p1"},
        Accept="application/json",
    )
    assert response["Content-Type"] == "application/json"
    assert json.loads(response.content)["result"]["content"][0]["text"] == "p1"


def test_no_notifications_means_json(mcp, fixtures_in_handbook):
    """Without a progress token the same tool answers in plain JSON."""
    response = call(mcp, "test_tool_with_progress")
    assert response["Content-Type"] == "application/json"


def test_modern_logs_only_with_a_log_level(mcp, fixtures_in_handbook):
    """2026-07-28: no notifications/message unless _meta carries logLevel, and
    then only at or above it."""
    assert call(mcp, "test_logging_tool")["Content-Type"] == "application/json"
    level = "io.modelcontextprotocol/logLevel"
    messages = read_stream(call(mcp, "test_logging_tool", meta={level: "debug"}))
    assert [m["params"]["data"] for m in messages[:-1]] == [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ]
    quiet = call(mcp, "test_logging_tool", meta={level: "error"})
    assert quiet["Content-Type"] == "application/json"


def test_legacy_logs_without_a_level(mcp_legacy, fixtures_in_handbook):
    """Handshake era: a stateless server cannot remember setLevel, so it logs."""
    messages = read_stream(call(mcp_legacy, "test_tool_with_logging"))
    assert [m["method"] for m in messages[:-1]] == ["notifications/message"] * 3


def test_missing_client_capability_is_32021(mcp, fixtures_in_handbook):
    """A tool needing sampling from a client that didn't declare it: -32021 with
    the capabilities as an object; declared, it runs."""
    response = call(mcp, "test_missing_capability")
    assert response.status_code == 400
    error = json.loads(response.content)["error"]
    assert error["code"] == -32021
    assert error["data"] == {"requiredCapabilities": {"sampling": {}}}
    capabilities = {"io.modelcontextprotocol/clientCapabilities": {"sampling": {}}}
    response = call(mcp, "test_missing_capability", meta=capabilities)
    assert response.status_code == 200


def test_param_headers_must_mirror_arguments(mcp, fixtures_in_handbook):
    """x-mcp-header arguments need matching Mcp-Param headers: present iff the
    argument is, equal after base64 decoding, integers compared as numbers."""
    arguments = {"region": "eu-west", "priority": 3}
    ok = call(
        mcp,
        "test_custom_headers",
        arguments,
        **{"Mcp-Param-Region": "eu-west", "Mcp-Param-Priority": "3.0"},
    )
    assert ok.status_code == 200
    encoded = "=?base64?" + base64.b64encode(b"eu-west").decode() + "?="
    ok = call(
        mcp,
        "test_custom_headers",
        {"region": "eu-west"},
        **{"Mcp-Param-Region": encoded},
    )
    assert ok.status_code == 200
    for headers in (
        {},
        {"Mcp-Param-Region": "us-east"},
        {"Mcp-Param-Region": "=?base64?ZXUtd2VzdA?="},
        {"Mcp-Param-Region": "eu-west", "Mcp-Param-Priority": "1"},
    ):
        response = call(mcp, "test_custom_headers", {"region": "eu-west"}, **headers)
        assert response.status_code == 400, headers
        assert json.loads(response.content)["error"]["code"] == -32020


def test_input_required_result_is_passed_through(mcp, fixtures_in_handbook):
    """A tool may answer with an MRTR interim result, which is not cacheable."""
    result = mcp.call_tool("test_streaming_elicitation")
    assert result["resultType"] == "input_required"
    assert "ttlMs" not in result
    assert result["inputRequests"]["confirm"]["method"] == "elicitation/create"


def test_fixtures_stay_out_of_other_channels(mcp_any, fixtures_in_handbook, papers):
    """Fixtures registered for one channel are not listed elsewhere."""
    from documents.services.keys import create_api_key
    from mcp_endpoint.tests.conftest import McpClient

    key = create_api_key(actor=COMMAND_LINE, name="p", channels=[papers]).raw_key
    names = [t["name"] for t in McpClient("papers", key).result("tools/list")["tools"]]
    assert not any(name.startswith("test_") for name in names)
    handbook_names = [t["name"] for t in mcp_any.result("tools/list")["tools"]]
    assert "test_simple_text" in handbook_names


def test_multi_round_trip_keeps_signed_state(mcp, fixtures_in_handbook):
    """An input_required result carries signed requestState; the retry with the
    answers completes it, and a tampered state is -32602."""
    name = "test_input_required_result_request_state"
    first = mcp.call_tool(name)
    assert first["resultType"] == "input_required"
    state = first["requestState"]
    answer = {"confirm": {"action": "accept", "content": {"ok": True}}}
    params = {"name": name, "arguments": {}, "inputResponses": answer}
    done = mcp.result("tools/call", {**params, "requestState": state})
    assert "state-ok" in done["content"][0]["text"]
    status, error = mcp.error("tools/call", {**params, "requestState": state + "x"})
    assert (status, error["code"]) == (400, -32602)


def test_prompt_can_ask_for_input(mcp, fixtures_in_handbook):
    """prompts/get may answer input_required, then the messages."""
    name = "test_input_required_result_prompt"
    first = mcp.result("prompts/get", {"name": name})
    assert first["resultType"] == "input_required"
    answer = {"user_context": {"action": "accept", "content": {"context": "HR"}}}
    done = mcp.result("prompts/get", {"name": name, "inputResponses": answer})
    assert done["messages"][0]["content"]["text"] == "Use this context: HR"


def test_malformed_input_responses_are_invalid_params(mcp, fixtures_in_handbook):
    """inputResponses that is not an object is -32602."""
    params = {"name": "test_simple_text", "arguments": {}, "inputResponses": [1]}
    status, error = mcp.error("tools/call", params)
    assert (status, error["code"]) == (400, -32602)


def test_quiet_streams_get_keepalive_comments(mcp, fixtures_in_handbook, monkeypatch):
    """While a streamed call is quiet the server sends `: ping` comment lines,
    which clients ignore."""
    from mcp_endpoint import views

    monkeypatch.setattr(views, "SSE_PING_SECONDS", 0.01)
    response = call(mcp, "test_tool_with_progress", meta={"progressToken": 7})
    assert b": ping\n\n" in response.stream_body
    assert read_stream(response)[-1]["result"]["content"][0]["text"] == "7"


def test_only_a_tool_call_may_notify():
    """A tool call (or a body too large to peek at) may notify before its
    result; any other method, and a body that doesn't parse, can't."""
    from mcp_endpoint.protocol import may_notify

    def body(method: str) -> bytes:
        return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method}).encode()

    assert may_notify(body("tools/call"))
    assert not may_notify(body("tools/list"))
    assert not may_notify(body("server/discover"))
    assert not may_notify(b"{not json")
    assert not may_notify(b"[" * 4000)
    assert not may_notify(b'{"jsonrpc": "2.0", "id": 1, "method": ["tools/call"]}')
    assert not may_notify(b'{"jsonrpc": "2.0", "id": 1, "method": {}}')
    assert may_notify(body("tools/list")[:-1] + b', "x": "' + b"a" * 5000 + b'"}')


def test_methods_that_cant_notify_are_answered_without_a_stream(mcp_any, monkeypatch):
    """tools/list from a client that accepts SSE is one JSON response, without
    the stream's tasks being set up."""
    from mcp_endpoint import views

    async def no_stream(*args, **kwargs):
        raise AssertionError("a stream was set up")

    monkeypatch.setattr(views, "_stream", no_stream)
    response = mcp_any.send("tools/list")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert "tools" in json.loads(response.content)["result"]
