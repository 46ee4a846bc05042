"""Tool definitions built per channel on every tools/list."""

import pytest

from documents.tests.corpus import add_document
from mcp_endpoint.tests.conftest import McpClient

pytestmark = pytest.mark.django_db


def tools_by_name(client: McpClient) -> dict:
    return {tool["name"]: tool for tool in client.result("tools/list")["tools"]}


def filter_properties(tool: dict) -> dict:
    schema = tool["inputSchema"]["properties"]["metadata_filter"]
    object_schema = next(s for s in schema["anyOf"] if s.get("type") == "object")
    assert {"type": "null"} in schema["anyOf"]
    return object_schema["properties"]


def test_every_tool_has_title_annotations_and_a_closed_schema(mcp_any):
    """Each tool has a title, a description, read-only annotations (except
    submit_feedback) and an object input schema forbidding unknown properties."""
    for tool in tools_by_name(mcp_any).values():
        assert tool["title"] and tool["description"]
        assert tool["inputSchema"]["type"] == "object"
        assert tool["inputSchema"]["additionalProperties"] is False
        annotations = tool["annotations"]
        assert annotations["destructiveHint"] is False
        assert annotations["readOnlyHint"] is (tool["name"] != "submit_feedback")
        if "outputSchema" in tool:
            assert tool["outputSchema"]["type"] == "object"


def test_structured_tools_declare_output_schemas(mcp):
    """Tools returning structured content declare an outputSchema; get_pages
    (content blocks) does not."""
    tools = tools_by_name(mcp)
    assert "outputSchema" not in tools["get_pages"]
    for name in (
        "list_documents",
        "get_citation_url",
        "retrieve_text_chunks",
        "rag_search",
        "submit_feedback",
    ):
        assert "outputSchema" in tools[name], name


def test_schemas_differ_between_channels(mcp, papers, papers_key):
    """Each channel's filter lists its own fields and the values in use."""
    handbook_tools = tools_by_name(mcp)
    papers_tools = tools_by_name(McpClient("papers", papers_key))
    handbook_filter = filter_properties(handbook_tools["retrieve_text_chunks"])
    papers_filter = filter_properties(papers_tools["retrieve_text_chunks"])
    assert set(handbook_filter) == {"topic", "year"}
    assert set(papers_filter) == {"journal"}
    topic = handbook_filter["topic"]["anyOf"][0]
    # Only ready documents' values: the pending "Draft" document's isn't listed.
    assert topic["enum"] == ["expenses", "holidays", "security"]
    assert papers_filter["journal"]["anyOf"][0]["enum"] == ["Nature"]
    output = handbook_tools["list_documents"]["outputSchema"]
    item = output["properties"]["results"]["items"]["properties"]
    assert {"topic", "year"} <= set(item)
    papers_output = papers_tools["list_documents"]["outputSchema"]
    assert "journal" in papers_output["properties"]["results"]["items"]["properties"]


def test_newest_first_only_with_newest_sort(mcp, papers, papers_key):
    """newest_first exists only where the channel sets newest_sort, and the
    description states the order either way."""
    handbook_list = tools_by_name(mcp)["list_documents"]
    papers_list = tools_by_name(McpClient("papers", papers_key))["list_documents"]
    assert "newest_first" in handbook_list["inputSchema"]["properties"]
    assert "newest first by year (desc)" in handbook_list["description"]
    assert "newest_first" not in papers_list["inputSchema"]["properties"]
    assert "nothing about relevance or recency" in papers_list["description"]


def test_schema_follows_the_corpus_on_every_list(mcp, handbook, fake_embedder):
    """A new value in use shows up in the enum on the next tools/list."""
    add_document(handbook, title="New", pages=["x"], metadata={"topic": "travel"})
    topic = filter_properties(tools_by_name(mcp)["list_documents"])["topic"]
    assert "travel" in topic["anyOf"][0]["enum"]


def test_page_cap_and_limits_are_stated(mcp, settings):
    """get_pages states the channel's page cap; limits carry their caps."""
    settings.MCP_LIST_LIMIT_MAX = 40
    tools = tools_by_name(mcp)
    assert "At most 2 pages per call" in tools["get_pages"]["description"]
    page_end = tools["get_pages"]["inputSchema"]["properties"]["page_end"]
    assert "at most 2 pages" in page_end["description"]
    assert (
        tools["list_documents"]["inputSchema"]["properties"]["limit"]["maximum"] == 40
    )
    limit = tools["retrieve_text_chunks"]["inputSchema"]["properties"]["limit"]
    assert limit["anyOf"][0]["maximum"] == settings.MCP_MAX_RESULTS


def test_search_tools_say_document_ids_override_the_filter(mcp):
    """The descriptions of document_ids and metadata_filter say that document_ids
    wins."""
    properties = tools_by_name(mcp)["rag_search"]["inputSchema"]["properties"]
    assert "metadata_filter is ignored" in properties["document_ids"]["description"]
    assert (
        "Ignored when document_ids is set"
        in properties["metadata_filter"]["description"]
    )
    assert "one question per call" in properties["query"]["description"].lower()


def test_tools_list_query_count_is_bounded(
    mcp, handbook, django_assert_max_num_queries
):
    """tools/list builds every tool's schema from one set of queries (auth, rate
    limit, fields, values in use), however many tools share the filter schema."""
    with django_assert_max_num_queries(10):
        mcp.result("tools/list")
    for number in range(5):
        add_document(
            handbook,
            title=f"Extra {number}",
            pages=["x"],
            metadata={"topic": f"t{number}"},
        )
    with django_assert_max_num_queries(10):
        mcp.result("tools/list")
