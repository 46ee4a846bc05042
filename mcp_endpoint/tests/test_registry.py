"""The registry: a tool brings its own switch to every channel's form, and a
name is registered once."""

import pytest
from django.urls import reverse
from pydantic import BaseModel, ConfigDict

from documents.access import COMMAND_LINE
from documents.models import Channel
from documents.services.keys import create_api_key
from documents.tool_switches import switch_catalogue
from mcp_endpoint.registry import Tool, ToolResult, registry, text_block
from mcp_endpoint.tests.conftest import McpClient
from mcp_endpoint.tools.documents import GetPages

pytestmark = pytest.mark.django_db


class Echo(Tool):
    """Say the word back."""

    name = "echo_word"
    title = "Echo a word"

    class Args(BaseModel):
        model_config = ConfigDict(extra="forbid")
        word: str

    async def run(self, args, ctx) -> ToolResult:
        return ToolResult(content=[text_block(args.word)])


@pytest.fixture
def echo():
    tool = registry.register(Echo())
    yield tool
    registry.unregister(tool)


@pytest.fixture
def plain(make_channel):
    channel = make_channel("plain")
    key = create_api_key(actor=COMMAND_LINE, name="plain agent", channels=[channel])
    return channel, McpClient("plain", key.raw_key)


def tool_names(client: McpClient) -> set[str]:
    return {tool["name"] for tool in client.result("tools/list")["tools"]}


def form_data(**overrides) -> dict:
    data = {
        "name": "Plain",
        "slug": "plain",
        "description": "",
        "retriever_mode": "hybrid",
        "retriever_candidates": "100",
        "retriever_top_k": "8",
        "retriever_rrf_k": "60",
        "generator_kind": "extractive",
        "generator_temperature": "0",
        "generator_timeout": "30",
        "mcp_instructions": "",
        "max_pages_per_call": "10",
        "metadata_fields-TOTAL_FORMS": "0",
        "metadata_fields-INITIAL_FORMS": "0",
        "metadata_fields-MIN_NUM_FORMS": "0",
        "metadata_fields-MAX_NUM_FORMS": "1000",
    }
    return data | overrides


def test_a_registered_tool_is_offered_and_switched_in_the_channel_form(
    echo, plain, admin_client
):
    """A newly registered tool is in tools/list at once, has its checkbox (with
    its title) in the channel form, and unticking it there removes it."""
    channel, client = plain
    assert "echo_word" in tool_names(client)
    assert client.call_tool_expecting_success("echo_word", {"word": "hi"})[
        "content"
    ] == [text_block("hi")]

    change = reverse("admin:documents_channel_change", args=[channel.pk])
    page = admin_client.get(change).content.decode()
    assert 'value="echo_word"' in page and "echo_word (Echo a word)" in page

    ticked = [s.name for s in switch_catalogue if s.name != "echo_word"]
    response = admin_client.post(change, form_data(tool_switches=ticked))
    assert response.status_code == 302, response.context["adminform"].form.errors
    channel.refresh_from_db()
    assert channel.tool_switches["echo_word"] is False
    assert "echo_word" not in tool_names(client)
    assert "list_documents" in tool_names(client)


def test_a_registered_tool_follows_its_default_until_the_channel_chooses(plain):
    """A tool that is off by default stays off in channels that never chose,
    and comes on when the channel switches it on."""
    channel, client = plain

    class Quiet(Echo):
        name = "quiet_word"
        on_by_default = False

    tool = registry.register(Quiet())
    try:
        assert "quiet_word" not in tool_names(client)
        assert "quiet_word" not in channel.enabled_tools()
        channel.tool_switches = {"quiet_word": True}
        channel.save()
        assert "quiet_word" in tool_names(client)
        assert "quiet_word" in Channel.objects.get(pk=channel.pk).enabled_tools()
    finally:
        registry.unregister(tool)
    assert switch_catalogue.get("quiet_word") is None


def test_registering_a_name_twice_is_refused():
    """A second tool under a name already registered raises instead of silently
    replacing the first."""
    with pytest.raises(ValueError, match="get_pages"):
        registry.register(GetPages())
    assert registry.tool(Channel(slug="any"), "get_pages").__class__ is GetPages


def test_every_tool_quire_registers_has_a_switch_the_channel_lists(plain):
    """Each of Quire's tools has its switch in the catalogue, and a channel's
    enabled tools (its REST description) are exactly what tools/list serves
    (the page viewer's app-only tool follows get_pages' switch)."""
    channel, client = plain
    channel.tool_switches = {"research": True}
    channel.save()
    served = [tool.name for tool in registry.tools(channel) if not tool.app_only]
    assert served == channel.enabled_tools()
    assert tool_names(client) == set(served)
    assert {"search", "fetch", "rag_search"} <= set(served)
    assert [s.name for s in switch_catalogue] == [
        "list_documents",
        "get_pages",
        "get_citation_url",
        "retrieve_text_chunks",
        "rag_search",
        "submit_feedback",
        "research",
    ]
