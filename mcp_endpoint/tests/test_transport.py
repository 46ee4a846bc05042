"""HTTP transport: access control, methods, sizes, content negotiation, limits."""

import datetime
import importlib
import json
import logging

import pytest
from django.urls import clear_url_caches
from django.utils import timezone

from documents.access import COMMAND_LINE
from documents.services.keys import create_api_key, revoke_api_key
from mcp_endpoint.tests.conftest import McpClient

pytestmark = pytest.mark.django_db


def test_missing_key_is_refused_with_401(handbook):
    """A request without a key gets 401 and a Bearer challenge, before any work."""
    response = McpClient("handbook", None).send("tools/list")
    assert response.status_code == 401
    challenge = response["WWW-Authenticate"]
    assert challenge.startswith("Bearer resource_metadata=")
    assert "error=" not in challenge  # no credentials, no error (RFC 6750)
    assert json.loads(response.content)["error"]["message"] == "An API key is required."


def test_unknown_key_is_refused_with_401(handbook):
    """A key nobody issued gets 401."""
    response = McpClient("handbook", "qk_not-a-real-key").send("tools/list")
    assert response.status_code == 401


def test_revoked_key_is_refused_with_401(handbook):
    """A revoked key gets 401."""
    new = create_api_key(actor=COMMAND_LINE, name="old", channels=[handbook])
    revoke_api_key(actor=COMMAND_LINE, api_key=new.api_key)
    response = McpClient("handbook", new.raw_key).send("tools/list")
    assert response.status_code == 401
    assert "revoked" in json.loads(response.content)["error"]["message"]


def test_expired_key_is_refused_with_401(handbook):
    """A key past its expiry date gets 401."""
    past = timezone.now() - datetime.timedelta(minutes=1)
    new = create_api_key(
        actor=COMMAND_LINE, name="old", channels=[handbook], expires_at=past
    )
    response = McpClient("handbook", new.raw_key).send("tools/list")
    assert response.status_code == 401
    assert "expired" in json.loads(response.content)["error"]["message"]


def test_key_of_another_channel_is_refused_with_403(handbook, papers_key):
    """A valid key that doesn't open this channel gets 403."""
    response = McpClient("handbook", papers_key).send("tools/list")
    assert response.status_code == 403


def test_api_key_header_is_accepted(handbook, handbook_key):
    """`api-key: <key>` works like `Authorization: Bearer <key>`."""
    client = McpClient("handbook", None)
    headers = client.headers("tools/list") | {"api-key": handbook_key}
    response = client.post(client.message("tools/list"), headers=headers)
    assert response.status_code == 200


def test_unknown_channel_is_404(handbook_key):
    """A slug with no channel gets 404."""
    response = McpClient("nowhere", handbook_key).send("tools/list")
    assert response.status_code == 404


@pytest.mark.parametrize("with_key, status", [(True, 200), (False, 401)])
def test_a_trailing_slash_gets_the_same_json_rpc_answer(
    handbook, handbook_key, with_key, status
):
    """/mcp/<slug>/ answers exactly as /mcp/<slug> does (a result with a key, the
    JSON-RPC 401 without one), never an HTML page."""
    key = handbook_key if with_key else None
    plain = McpClient("handbook", key)
    slashed = McpClient("handbook", key)
    slashed.path += "/"
    answers = [client.send("tools/list") for client in (plain, slashed)]
    assert [answer.status_code for answer in answers] == [status, status]
    assert answers[1]["Content-Type"] == "application/json"
    assert json.loads(answers[1].content) == json.loads(answers[0].content)


@pytest.mark.parametrize("key", [None, "qk_not-a-key"])
def test_unknown_channel_without_a_valid_key_is_401(handbook, key):
    """Without a valid key an unknown slug looks like a known one (401), so
    channel names can't be probed."""
    unknown = McpClient("nowhere", key).send("tools/list")
    known = McpClient("handbook", key).send("tools/list")
    assert unknown.status_code == known.status_code == 401


def test_foreign_origin_is_refused_with_403(mcp):
    """An Origin that is not on MCP_ALLOWED_ORIGINS gets 403."""
    response = mcp.send("tools/list", Origin="http://evil.example.com")
    assert response.status_code == 403


def test_allowed_origin_on_any_port_is_accepted(mcp):
    """An allowed origin listed without a port matches any port of that host."""
    response = mcp.send("tools/list", Origin="http://localhost:6274")
    assert response.status_code == 200


def test_foreign_host_is_refused(mcp):
    """A Host outside ALLOWED_HOSTS (DNS rebinding) gets a 4xx."""
    response = mcp.send("tools/list", Host="evil.example.com")
    assert 400 <= response.status_code < 500


@pytest.mark.parametrize("method", ["get", "delete", "put"])
def test_other_http_methods_get_405(mcp, method):
    """Only POST is served; other methods get 405 with Allow: POST."""
    from asgiref.sync import async_to_sync

    response = async_to_sync(getattr(mcp.client, method))(
        mcp.path, headers=mcp.headers()
    )
    assert response.status_code == 405
    assert response["Allow"] == "POST"
    assert response.content == b""


def test_oversized_body_gets_413(mcp, settings):
    """A body over MCP_MAX_BODY_BYTES gets 413 without being parsed."""
    settings.MCP_MAX_BODY_BYTES = 2048
    message = mcp.message("tools/call", {"name": "submit_feedback"})
    message["params"]["arguments"] = {"query": "q" * 4000, "answer": "a", "score": 3}
    response = mcp.post(message, headers=mcp.headers("tools/call", "submit_feedback"))
    assert response.status_code == 413


def test_json_only_accept_is_served(mcp):
    """A client accepting only application/json gets JSON."""
    headers = mcp.headers("tools/list") | {"Accept": "application/json"}
    response = mcp.post(mcp.message("tools/list"), headers=headers)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"


def test_accept_without_json_gets_406(mcp):
    """A client that doesn't accept JSON gets 406."""
    headers = mcp.headers("tools/list") | {"Accept": "text/html"}
    response = mcp.post(mcp.message("tools/list"), headers=headers)
    assert response.status_code == 406


def test_wrong_content_type_gets_415(mcp):
    """A body that is not declared as JSON gets 415."""
    response = mcp.post(mcp.message("tools/list"), content_type="text/plain")
    assert response.status_code == 415


def test_rate_limit_answers_429_with_retry_after(mcp, settings, steady_rate_window):
    """Past MCP_RATE_LIMIT_PER_MINUTE requests a key gets 429 and Retry-After."""
    settings.MCP_RATE_LIMIT_PER_MINUTE = 3
    statuses = [mcp.send("tools/list").status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    response = mcp.send("tools/list")
    assert int(response["Retry-After"]) == 30  # the window ends 30 s after the pin


def test_rate_limit_counts_per_key(
    handbook, handbook_key, settings, steady_rate_window
):
    """Another key of the same channel has its own budget."""
    settings.MCP_RATE_LIMIT_PER_MINUTE = 1
    other = create_api_key(
        actor=COMMAND_LINE, name="second", channels=[handbook]
    ).raw_key
    assert McpClient("handbook", handbook_key).send("tools/list").status_code == 200
    assert McpClient("handbook", handbook_key).send("tools/list").status_code == 429
    assert McpClient("handbook", other).send("tools/list").status_code == 200


def test_each_call_is_logged(mcp, caplog):
    """Each call logs method, tool, channel, status, outcome, milliseconds and
    the caller's prefix."""
    with caplog.at_level(logging.INFO, logger="mcp_endpoint"):
        mcp.call_tool("list_documents", {})
        mcp.call_tool("get_pages", {"document_id": 999, "page_start": 1, "page_end": 1})
    lines = [r.getMessage() for r in caplog.records if r.name == "mcp_endpoint"]
    assert any(
        "method=tools/call tool=list_documents channel=handbook status=200 outcome=ok"
        in line
        and "caller=qk_" in line
        for line in lines
    ), lines
    assert any(
        "tool=get_pages" in line and "outcome=tool_error" in line for line in lines
    )
    assert all(" ms=" in line for line in lines)


def test_no_session_id_is_set(mcp_legacy):
    """Initialize (and everything else) answers without Mcp-Session-Id."""
    response = mcp_legacy.send(
        "initialize",
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t"},
        },
    )
    assert response.status_code == 200
    assert "Mcp-Session-Id" not in response


def test_mcp_enabled_false_removes_the_endpoint(mcp, settings):
    """With MCP_ENABLED false the URL is not routed at all."""
    import project.urls

    settings.MCP_ENABLED = False
    try:
        clear_url_caches()
        importlib.reload(project.urls)
        assert mcp.send("tools/list").status_code == 404
    finally:
        settings.MCP_ENABLED = True
        clear_url_caches()
        importlib.reload(project.urls)
    assert mcp.send("tools/list").status_code == 200


def test_server_error_never_leaks_a_traceback(mcp, monkeypatch):
    """An unexpected failure inside a tool becomes an isError result without
    internals, and the same inside the protocol becomes -32603."""
    from mcp_endpoint import protocol
    from mcp_endpoint.tools.documents import ListDocuments

    async def explode(self, args, ctx):
        raise RuntimeError("secret internals")

    monkeypatch.setattr(ListDocuments, "run", explode)
    text = mcp.call_tool_expecting_error("list_documents", {})
    assert "secret" not in text and "server error" in text

    async def broken(params, ctx):
        raise RuntimeError("secret internals")

    monkeypatch.setitem(protocol.METHODS, "tools/list", (broken, protocol.BOTH))
    response = mcp.send("tools/list")
    body = json.loads(response.content)
    assert body["error"] == {"code": -32603, "message": "Internal error"}
    assert b"secret" not in response.content


def test_mcp_calls_skip_the_csrf_view_check_that_the_admin_keeps(
    handbook, handbook_key, monkeypatch
):
    """Django calls CSRF's process_view through a thread in async requests; MCP
    calls (csrf-exempt, cookie-less) skip it, while the admin still gets it."""
    from django.middleware import csrf
    from django.test import Client

    checked = []
    original = csrf.CsrfViewMiddleware.process_view

    def recording(self, request, *args):
        checked.append(request.path)
        return original(self, request, *args)

    monkeypatch.setattr(csrf.CsrfViewMiddleware, "process_view", recording)
    response = McpClient("handbook", handbook_key).send("tools/list")
    assert response.status_code == 200
    assert checked == []
    browser = Client(enforce_csrf_checks=True)
    refused = browser.post("/admin/login/", {"username": "x", "password": "y"})
    assert refused.status_code == 403  # no CSRF token
    assert checked == ["/admin/login/"]
