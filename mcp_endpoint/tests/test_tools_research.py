"""search and fetch for deep-research clients, on channels that switch them on."""

import pytest

from mcp_endpoint.tests.conftest import McpClient, doc_id

pytestmark = pytest.mark.django_db


def switch(channel, on: bool) -> None:
    """As the admin saves it (which also moves the cached schemas along)."""
    channel.refresh_from_db()
    channel.tool_switches = channel.tool_switches | {"research": on}
    channel.save()


@pytest.fixture
def research(handbook, handbook_key):
    switch(handbook, True)
    return McpClient("handbook", handbook_key)


def test_the_tools_appear_only_when_switched_on(mcp, research, handbook):
    names = {tool["name"] for tool in research.result("tools/list")["tools"]}
    assert {"search", "fetch"} <= names
    switch(handbook, False)
    names = {tool["name"] for tool in mcp.result("tools/list")["tools"]}
    assert not {"search", "fetch"} & names


def test_search_returns_ids_titles_and_links(research):
    results = research.call_tool_expecting_success("search", {"query": "holiday days"})[
        "structuredContent"
    ]["results"]
    first = results[0]
    holiday = doc_id("Holiday policy")
    assert first["id"].startswith(f"{holiday}:")
    assert first["title"].startswith("Holiday policy (page ")
    assert "/citations/" in first["url"]
    assert len({r["id"] for r in results}) == len(results)


def test_fetch_returns_a_page_or_a_document(research):
    holiday = doc_id("Holiday policy")
    page = research.call_tool_expecting_success("fetch", {"id": f"{holiday}:2"})
    item = page["structuredContent"]
    assert item["id"] == f"{holiday}:2" and item["title"] == "Holiday policy"
    assert item["text"].startswith(f"[Document {holiday}, Page 2]")
    assert item["metadata"]["page_count"] == 3
    whole = research.call_tool_expecting_success("fetch", {"id": str(holiday)})
    text = whole["structuredContent"]["text"]
    assert all(f"[Document {holiday}, Page {n}]" in text for n in (1, 2, 3))
    error = research.call_tool_expecting_error("fetch", {"id": "../etc"})
    assert "not an id from search" in error
    assert "no document 999999" in research.call_tool_expecting_error(
        "fetch", {"id": "999999"}
    )
