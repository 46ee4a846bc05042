"""JSON-RPC in both eras: handshake, discovery, the 2026-07-28 validation ladder,
result envelopes, errors, pagination."""

import base64
import json

import pytest

from mcp_endpoint.tests.conftest import MODERN

pytestmark = pytest.mark.django_db


def test_legacy_initialize_echoes_a_handshake_version(mcp_legacy):
    """initialize answers with the requested handshake version, capabilities,
    server info and instructions, and no modern envelope."""
    result = mcp_legacy.result(
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t"},
        },
    )
    assert result["protocolVersion"] == "2025-06-18"
    assert set(result["capabilities"]) == {
        "tools",
        "resources",
        "prompts",
        "completions",
        "logging",
    }
    assert result["serverInfo"]["name"] == "quire"
    assert "Handbook" in result["instructions"]
    assert "resultType" not in result


def test_legacy_initialize_offers_latest_for_unknown_versions(mcp_legacy):
    """An unknown requested version gets the latest handshake version."""
    result = mcp_legacy.result("initialize", {"protocolVersion": "2099-01-01"})
    assert result["protocolVersion"] == "2025-11-25"


def test_channel_instructions_are_sent(mcp_legacy, handbook):
    """The channel's own server instructions replace the default text."""
    handbook.mcp_instructions = "Only answer questions about HR."
    handbook.save()
    result = mcp_legacy.result("initialize", {"protocolVersion": "2025-11-25"})
    assert result["instructions"] == "Only answer questions about HR."


def test_legacy_ping_and_set_level(mcp_legacy):
    """ping and logging/setLevel answer {}; a bad level is -32602."""
    assert mcp_legacy.result("ping") == {}
    assert mcp_legacy.result("logging/setLevel", {"level": "debug"}) == {}
    status, error = mcp_legacy.error("logging/setLevel", {"level": "loud"})
    assert (status, error["code"]) == (200, -32602)


def test_notifications_get_202(mcp_any):
    """A notification is accepted with 202 and an empty body in both eras."""
    message = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    if mcp_any.era == "modern":
        message["params"] = mcp_any.message("x")["params"]
    response = mcp_any.post(
        message, headers=mcp_any.headers("notifications/initialized")
    )
    assert response.status_code == 202
    assert response.content == b""


def test_modern_notification_with_unserved_version_is_400(mcp):
    """A modern notification whose version header is not served gets -32022."""
    headers = mcp.headers() | {"MCP-Protocol-Version": "2030-01-01"}
    response = mcp.post(
        {"jsonrpc": "2.0", "method": "notifications/x"}, headers=headers
    )
    assert response.status_code == 400
    assert json.loads(response.content)["error"]["code"] == -32022


def test_parse_error_is_400_with_null_id(mcp_any):
    """Invalid JSON gets HTTP 400 and -32700 with an explicit null id."""
    response = mcp_any.post(b"{not json", headers=mcp_any.headers("tools/list"))
    assert response.status_code == 400
    assert json.loads(response.content) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Parse error"},
    }


@pytest.mark.parametrize(
    "body",
    [
        [{"jsonrpc": "2.0", "id": 1, "method": "ping"}],
        {"jsonrpc": "1.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": None, "method": "ping"},
        {"jsonrpc": "2.0", "id": True, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1, "method": 5},
        json.dumps("just a string"),
    ],
)
def test_invalid_requests_are_400(mcp_legacy, body):
    """Batches and malformed envelopes get 400 and -32600 with a null id."""
    response = mcp_legacy.post(body, headers=mcp_legacy.headers("ping"))
    assert response.status_code == 400
    payload = json.loads(response.content)
    assert payload["id"] is None
    assert payload["error"]["code"] == -32600


def test_string_ids_are_echoed(mcp_legacy):
    """Request ids keep their type."""
    message = {"jsonrpc": "2.0", "id": "abc", "method": "ping"}
    response = mcp_legacy.post(message, headers=mcp_legacy.headers("ping"))
    assert json.loads(response.content)["id"] == "abc"


def test_posted_response_is_accepted_in_legacy_and_refused_in_modern(mcp_any):
    """A JSON-RPC response body: 202 in the handshake era, 400 in 2026-07-28."""
    message = {"jsonrpc": "2.0", "id": 7, "result": {}}
    if mcp_any.era == "modern":
        headers = mcp_any.headers("x") | {"MCP-Protocol-Version": MODERN}
        message["params"] = mcp_any.message("x")["params"]
    else:
        headers = mcp_any.headers("x")
    response = mcp_any.post(message, headers=headers)
    assert response.status_code == (202 if mcp_any.era == "legacy" else 400)


def test_discover_lists_versions_capabilities_and_cache_fields(mcp):
    """server/discover gives the served versions and the full modern envelope."""
    result = mcp.result("server/discover")
    assert result["supportedVersions"] == [MODERN]
    assert result["capabilities"] == {
        "tools": {},
        "resources": {},
        "prompts": {},
        "completions": {},
    }
    assert result["resultType"] == "complete"
    assert result["ttlMs"] >= 0 and result["cacheScope"] == "private"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "quire"


@pytest.mark.parametrize(
    "method", ["initialize", "ping", "logging/setLevel", "resources/subscribe", "nope"]
)
def test_modern_unknown_methods_are_404(mcp, method):
    """Handshake-only and unknown methods get 404 and -32601 in 2026-07-28."""
    status, error = mcp.error(method)
    assert (status, error["code"]) == (404, -32601)
    assert error["data"] == method


def test_legacy_unknown_method_is_32601_at_200(mcp_legacy):
    """In the handshake era an unknown method is -32601 with HTTP 200."""
    status, error = mcp_legacy.error("server/discover")
    assert (status, error["code"]) == (200, -32601)


def test_modern_results_carry_envelope_legacy_results_do_not(mcp_any):
    """resultType/_meta/ttlMs/cacheScope appear only on the 2026-07-28 wire."""
    result = mcp_any.result("tools/list")
    modern_keys = {"resultType", "_meta", "ttlMs", "cacheScope"}
    if mcp_any.era == "modern":
        assert modern_keys <= set(result)
    else:
        assert not modern_keys & set(result)


def test_tool_call_results_are_not_cached(mcp):
    """tools/call is not cacheable: no ttlMs or cacheScope."""
    result = mcp.call_tool("list_documents")
    assert result["resultType"] == "complete"
    assert "ttlMs" not in result and "cacheScope" not in result


# --- The 2026-07-28 validation ladder ------------------------------------------------


def test_missing_meta_is_invalid_params(mcp):
    """A modern request without params._meta gets 400 and -32602."""
    message = mcp.message("tools/list")
    message["params"]["_meta"].pop("io.modelcontextprotocol/clientCapabilities")
    response = mcp.post(message, headers=mcp.headers("tools/list"))
    assert response.status_code == 400
    assert json.loads(response.content)["error"]["code"] == -32602


def test_body_claiming_modern_without_header_is_header_mismatch(mcp):
    """_meta says 2026-07-28 but no MCP-Protocol-Version header: -32020."""
    headers = mcp.headers("tools/list")
    del headers["MCP-Protocol-Version"]
    response = mcp.post(mcp.message("tools/list"), headers=headers)
    assert response.status_code == 400
    assert json.loads(response.content)["error"]["code"] == -32020


@pytest.mark.parametrize(
    "header, value",
    [
        ("Mcp-Method", "tools/call"),
        ("Mcp-Method", "TOOLS/LIST"),
        ("MCP-Protocol-Version", "2025-11-25x"),
    ],
)
def test_header_body_disagreement_is_header_mismatch(mcp, header, value):
    """Headers that disagree with the body get 400 and -32020."""
    headers = mcp.headers("tools/list") | {header: value}
    response = mcp.post(mcp.message("tools/list"), headers=headers)
    assert response.status_code == 400
    body = json.loads(response.content)
    assert body["error"]["code"] == -32020
    assert body["id"] == mcp.next_id


def test_mcp_name_must_match_tool_name(mcp):
    """Mcp-Name that names another tool gets -32020; base64 form is decoded."""
    message = mcp.message("tools/call", {"name": "list_documents", "arguments": {}})
    headers = mcp.headers("tools/call", "get_pages")
    assert mcp.post(message, headers=headers).status_code == 400
    encoded = "=?base64?" + base64.b64encode(b"list_documents").decode() + "?="
    headers = mcp.headers("tools/call", encoded)
    assert mcp.post(message, headers=headers).status_code == 200


def test_mcp_name_must_match_resource_uri(mcp):
    """resources/read compares Mcp-Name with params.uri."""
    message = mcp.message("resources/read", {"uri": "index://stats"})
    assert (
        mcp.post(
            message, headers=mcp.headers("resources/read", "index://x")
        ).status_code
        == 400
    )
    assert (
        mcp.post(
            message, headers=mcp.headers("resources/read", "index://stats")
        ).status_code
        == 200
    )


def test_unsupported_modern_version_lists_supported(mcp):
    """An unserved version in both header and body gets -32022 with data."""
    message = mcp.message("tools/list")
    message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "2030-01-01"
    headers = mcp.headers("tools/list") | {"MCP-Protocol-Version": "2030-01-01"}
    response = mcp.post(message, headers=headers)
    assert response.status_code == 400
    error = json.loads(response.content)["error"]
    assert error["code"] == -32022
    assert error["data"] == {"supported": [MODERN], "requested": "2030-01-01"}


# --- Pagination, resources, prompts ------------------------------------------------


def test_tools_list_pages_with_opaque_cursors(mcp_any, settings):
    """tools/list pages by MCP_PAGE_SIZE; the cursors walk the whole catalogue
    and a bad cursor is -32602."""
    settings.MCP_PAGE_SIZE = 4
    first = mcp_any.result("tools/list")
    assert len(first["tools"]) == 4
    second = mcp_any.result("tools/list", {"cursor": first["nextCursor"]})
    assert "nextCursor" not in second
    names = [t["name"] for t in first["tools"] + second["tools"]]
    assert names == [
        "list_documents",
        "get_pages",
        "get_citation_url",
        "retrieve_text_chunks",
        "rag_search",
        "submit_feedback",
    ]
    status, error = mcp_any.error("tools/list", {"cursor": "bogus!"})
    assert error["code"] == -32602


def test_resources_and_templates_are_listed(mcp_any):
    """index://stats is a resource and documents://metadata/{document_ids} a
    template, both with descriptions."""
    resources = mcp_any.result("resources/list")["resources"]
    assert [r["uri"] for r in resources] == ["index://stats"]
    templates = mcp_any.result("resources/templates/list")["resourceTemplates"]
    assert [t["uriTemplate"] for t in templates] == [
        "documents://metadata/{document_ids}"
    ]
    assert all(item["description"] for item in resources + templates)


def test_unknown_resource_error_depends_on_era(mcp_any):
    """A missing resource is -32002 in the handshake era and -32602 (HTTP 400)
    in 2026-07-28, with the uri in data."""
    status, error = mcp_any.error("resources/read", {"uri": "nothing://here"})
    if mcp_any.era == "modern":
        assert (status, error["code"]) == (400, -32602)
    else:
        assert (status, error["code"]) == (200, -32002)
    assert error["data"] == {"uri": "nothing://here"}


def test_production_channels_have_no_prompts(mcp_any):
    """Quire serves no prompts; prompts/list is empty and prompts/get -32602."""
    assert mcp_any.result("prompts/list")["prompts"] == []
    status, error = mcp_any.error("prompts/get", {"name": "x"})
    assert error["code"] == -32602


def test_completion_answers_empty(mcp_any):
    """completion/complete answers an empty completion for non-prompt refs."""
    result = mcp_any.result(
        "completion/complete",
        {
            "ref": {"type": "ref/resource", "uri": "x"},
            "argument": {"name": "a", "value": ""},
        },
    )
    assert result["completion"] == {"values": [], "total": 0, "hasMore": False}


def test_unknown_tool_is_a_protocol_error(mcp_any):
    """Calling a tool the channel doesn't have is -32602, not an isError result."""
    status, error = mcp_any.error(
        "tools/call", {"name": "drop_tables", "arguments": {}}
    )
    assert error["code"] == -32602
    assert error["message"] == "Unknown tool: drop_tables"
    assert status == (400 if mcp_any.era == "modern" else 200)


def test_switched_off_tool_is_unknown(papers, papers_key):
    """A tool switched off in the channel is neither listed nor callable."""
    from mcp_endpoint.tests.conftest import McpClient

    client = McpClient("papers", papers_key)
    names = [t["name"] for t in client.result("tools/list")["tools"]]
    assert "rag_search" not in names and "submit_feedback" not in names
    status, error = client.error(
        "tools/call", {"name": "submit_feedback", "arguments": {}}
    )
    assert error["code"] == -32602


def test_arguments_must_be_an_object(mcp):
    """Non-object arguments are a protocol error (-32602)."""
    status, error = mcp.error(
        "tools/call", {"name": "list_documents", "arguments": [1]}
    )
    assert (status, error["code"]) == (400, -32602)
