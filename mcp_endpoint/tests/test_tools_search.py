"""retrieve_text_chunks and rag_search."""

import json
import re

import pytest

from mcp_endpoint.tests.conftest import McpClient, doc_id

pytestmark = pytest.mark.django_db


def test_retrieve_text_chunks_finds_the_passage(mcp_any):
    """The best chunk answers the query, with its page, score and the metadata
    fields marked for retrieval."""
    result = mcp_any.call_tool_expecting_success(
        "retrieve_text_chunks", {"query": "how many days of paid holiday"}
    )
    chunks = result["structuredContent"]["chunks"]
    best = chunks[0]
    assert best["document_id"] == doc_id("Holiday policy")
    assert best["page_number"] == 1
    assert "twenty five days" in best["text"]
    assert isinstance(best["score"], float)
    assert best["metadata"] == {"team": "people"}
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]


def test_retrieve_text_chunks_limit_is_honoured_and_capped(mcp, settings):
    """limit bounds the result; a limit beyond MCP_MAX_RESULTS is capped."""
    one = mcp.call_tool_expecting_success(
        "retrieve_text_chunks", {"query": "holiday days", "limit": 1}
    )
    assert len(one["structuredContent"]["chunks"]) == 1
    settings.MCP_MAX_RESULTS = 2
    many = mcp.call_tool_expecting_success(
        "retrieve_text_chunks", {"query": "holiday days expenses laptops", "limit": 50}
    )
    assert len(many["structuredContent"]["chunks"]) <= 2


def test_retrieve_text_chunks_document_ids_override_the_filter(mcp):
    """document_ids restricts the search and the filter is then ignored."""
    expenses = doc_id("Expense rules")
    result = mcp.call_tool_expecting_success(
        "retrieve_text_chunks",
        {
            "query": "holiday expenses",
            "document_ids": [expenses],
            "metadata_filter": {"topic": "holidays"},
        },
    )
    chunks = result["structuredContent"]["chunks"]
    assert chunks and {c["document_id"] for c in chunks} == {expenses}


def test_retrieve_text_chunks_filter(mcp):
    """metadata_filter narrows the search."""
    result = mcp.call_tool_expecting_success(
        "retrieve_text_chunks",
        {"query": "days", "metadata_filter": {"topic": "expenses"}},
    )
    ids = {c["document_id"] for c in result["structuredContent"]["chunks"]}
    assert ids == {doc_id("Expense rules")}


@pytest.mark.parametrize(
    "arguments, expected",
    [
        ({"query": "x", "metadata_filter": {"topic": "holidayz"}}, "holidays"),
        ({"query": "x", "metadata_filter": {"nope": 1}}, "topic"),
        ({}, "query is required"),
        ({"query": ""}, "query"),
        ({"query": "x", "limit": 0}, "limit"),
    ],
)
def test_retrieve_text_chunks_errors(mcp_any, arguments, expected):
    """Bad filters and arguments are isError results a model can act on."""
    text = mcp_any.call_tool_expecting_error("retrieve_text_chunks", arguments)
    assert expected in text


def test_rag_search_answers_with_citations(mcp_any):
    """rag_search cites [Document <id>, Page <n>] inline and lists citations."""
    holidays = doc_id("Holiday policy")
    result = mcp_any.call_tool_expecting_success(
        "rag_search", {"query": "How many days of paid holiday do employees get?"}
    )
    text = result["content"][0]["text"]
    structured = result["structuredContent"]
    assert structured["answer"] == text
    labels = re.findall(r"\[Document (\d+), Page (\d+)\]", text)
    assert (str(holidays), "1") in labels
    assert any(c["document_id"] == holidays for c in structured["citations"])


def test_rag_search_without_support_says_no_references(mcp):
    """When nothing is cited the answer ends with "No references found"."""
    result = mcp.call_tool_expecting_success(
        "rag_search",
        {"query": "zebra quantum", "metadata_filter": {"topic": "security"}},
    )
    assert result["content"][0]["text"].endswith("No references found")


def test_rag_search_bad_filter_is_a_tool_error(mcp):
    """A bad filter in rag_search is an isError result."""
    text = mcp.call_tool_expecting_error(
        "rag_search", {"query": "x", "metadata_filter": {"year": "recent"}}
    )
    assert "year" in text


def test_search_stays_in_its_channel(papers, papers_key, handbook):
    """A channel's search never returns another channel's chunks."""
    client = McpClient("papers", papers_key)
    result = client.call_tool_expecting_success(
        "retrieve_text_chunks", {"query": "paid holiday days"}
    )
    ids = {c["document_id"] for c in result["structuredContent"]["chunks"]}
    assert ids <= {doc_id("Protein folding")}


def test_rag_search_chat_model_failure_is_a_tool_error(mcp, monkeypatch):
    """When the chat model fails, rag_search says so and points to
    retrieve_text_chunks, as an isError result."""
    from documents import generation

    def fail(*args, **kwargs):
        raise generation.GenerationError(
            "The chat model did not answer (ConnectError); try again later or use "
            "retrieve_text_chunks."
        )

    monkeypatch.setattr(generation, "answer_question", fail)
    text = mcp.call_tool_expecting_error("rag_search", {"query": "holidays"})
    assert "retrieve_text_chunks" in text


def test_rag_search_reports_progress_when_asked(mcp):
    """With a progress token rag_search streams progress, then the answer."""
    params = {
        "name": "rag_search",
        "arguments": {"query": "How many days of paid holiday?"},
        "_meta": {"progressToken": "rag"},
    }
    response = mcp.send("tools/call", params)
    assert response["Content-Type"] == "text/event-stream"
    frames = [
        json.loads(line.removeprefix("data: "))
        for line in response.stream_body.decode().splitlines()
        if line.startswith("data: ")
    ]
    assert [f["params"]["progress"] for f in frames[:-1]] == [0, 1]
    assert "twenty five" in frames[-1]["result"]["structuredContent"]["answer"]
