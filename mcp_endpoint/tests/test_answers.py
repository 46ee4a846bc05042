"""tools/list and server/discover from encoded bytes (mcp_endpoint.protocol.answers):
the same bytes as a fresh answer, and a new answer whenever an input changes."""

import json

import pytest

from documents.models import Channel
from documents.services.channels import bump_corpus_version
from documents.tests.corpus import add_document
from mcp_endpoint.protocol import answers
from mcp_endpoint.tests.conftest import McpClient
from mcp_endpoint.tests.test_viewer import AppsClient


def tool_names(client: McpClient) -> list[str]:
    return [tool["name"] for tool in client.result("tools/list")["tools"]]


def test_a_kept_answer_carries_each_request_id(mcp_any):
    """Two tools/list calls answer the same result, each with its own id (an
    integer and a string id are echoed with their type)."""
    first = json.loads(mcp_any.send("tools/list").content)
    message = mcp_any.message("tools/list")
    message["id"] = "call-two"
    second = json.loads(
        mcp_any.post(message, headers=mcp_any.headers("tools/list")).content
    )
    assert first["id"] == mcp_any.next_id - 1 and second["id"] == "call-two"
    assert first["result"] == second["result"]


def test_the_kept_bytes_are_what_the_method_answers(mcp_any):
    """The cached reply decodes to the same message as one built afresh."""
    cached = json.loads(mcp_any.send("tools/list").content)
    answers._answers.clear()
    fresh = json.loads(mcp_any.send("tools/list").content)
    assert cached["result"] == fresh["result"]


def test_a_tool_switched_off_leaves_tools_list_at_once(mcp, handbook):
    """A channel edit (a tool switched off) changes the next tools/list."""
    assert "rag_search" in tool_names(mcp)
    handbook.tool_switches = {**handbook.tool_switches, "rag_search": False}
    handbook.save()
    assert "rag_search" not in tool_names(mcp)


def test_a_new_field_value_reaches_the_filter_schema(mcp, handbook):
    """A document with a new metadata value (a corpus change, which bumps the
    channel's corpus version) changes the enums."""
    assert "parking" not in json.dumps(mcp.result("tools/list"))
    add_document(
        handbook,
        title="Parking",
        pages=["Staff park behind the building."],
        metadata={"topic": "parking", "year": 2026, "team": "facilities"},
    )
    bump_corpus_version(channel_id=handbook.pk)  # as ingestion ends
    assert "parking" in json.dumps(mcp.result("tools/list"))


def test_each_era_gets_its_own_answer(handbook, handbook_key):
    """The 2026-07-28 answer carries its envelope; the handshake era's never."""
    modern = McpClient("handbook", handbook_key, "modern").result("tools/list")
    legacy = McpClient("handbook", handbook_key, "legacy").result("tools/list")
    assert modern["resultType"] == "complete" and "ttlMs" in modern
    assert "resultType" not in legacy and "ttlMs" not in legacy


def test_discover_follows_the_channel_instructions(mcp, handbook):
    """server/discover's instructions change with the channel's."""
    assert "Handbook" in mcp.result("server/discover")["instructions"]
    Channel.objects.filter(pk=handbook.pk).update(mcp_instructions="Ask about rules.")
    handbook.refresh_from_db()
    handbook.save()  # updated_at, as the admin's form saves it
    assert mcp.result("server/discover")["instructions"] == "Ask about rules."


def test_declared_capabilities_and_cursors_are_inputs(mcp, handbook):
    """Requests differing in client capabilities or cursor are kept apart."""
    mcp.result("tools/list")
    message = mcp.message("tools/list")
    message["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = {
        "extensions": {"io.example/x": {}}
    }
    mcp.post(message, headers=mcp.headers("tools/list"))
    keys = [key for key in answers._answers if key[0] == "tools/list"]
    assert len({key[7] for key in keys}) == 2


@pytest.mark.parametrize("era_name", ["legacy", "modern"])
def test_a_client_declaring_apps_gets_its_own_answer(era_name, handbook, handbook_key):
    """In either era, a tools/list that declares MCP Apps (in `params._meta`)
    and one that doesn't are answered apart, whichever comes first: the app-only
    tool never reaches a plain client from the cache, nor the plain list an
    Apps client."""
    apps = AppsClient("handbook", handbook_key, era_name)
    plain = McpClient("handbook", handbook_key, era_name)
    assert "show_page" in tool_names(apps)
    assert "show_page" not in tool_names(plain)
    assert "show_page" in tool_names(apps)
