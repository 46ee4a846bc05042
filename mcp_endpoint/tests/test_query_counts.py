"""SQL queries per MCP call on the hot paths: bounded, and not growing with the
corpus. Tool definitions are cached per channel version, so a cached tools/list
costs only the access checks."""

import pytest

from documents.generation.vectors import prepare_document
from documents.models import Document
from documents.services.channels import bump_corpus_version
from documents.tests.corpus import add_document
from mcp_endpoint.tests.conftest import doc_id

pytestmark = pytest.mark.django_db

# Channel, key and rate-limit counter: one statement (mcp_endpoint.admission).
ACCESS_QUERIES = 1


def add_documents(channel, count: int) -> None:
    for number in range(count):
        add_document(
            channel,
            title=f"Extra {number}",
            pages=[f"Holiday rules, part {number}.", "More holiday days."],
            metadata={"topic": f"extra-{number}", "year": 2000 + number},
        )


def topic_enum(tools: list[dict]) -> list[str]:
    schema = next(t for t in tools if t["name"] == "list_documents")["inputSchema"]
    filter_object = schema["properties"]["metadata_filter"]["anyOf"][0]
    return filter_object["properties"]["topic"]["anyOf"][0]["enum"]


def test_cached_tools_list_costs_only_the_access_checks(
    mcp, handbook, django_assert_max_num_queries
):
    """After the first tools/list builds the definitions, the next ones run only
    the access checks, however many documents and values the channel has."""
    mcp.result("tools/list")
    with django_assert_max_num_queries(ACCESS_QUERIES):
        mcp.result("tools/list")
    add_documents(handbook, 10)
    bump_corpus_version(channel_id=handbook.pk)
    mcp.result("tools/list")
    with django_assert_max_num_queries(ACCESS_QUERIES):
        mcp.result("tools/list")


def test_tools_list_follows_the_corpus_version(mcp, handbook):
    """A value that appears in the corpus shows in the filter enum once the corpus
    version moves (ingestion and deletion bump it)."""
    assert "newcomer" not in topic_enum(mcp.result("tools/list")["tools"])
    add_document(
        handbook, title="New", pages=["Fresh text."], metadata={"topic": "newcomer"}
    )
    bump_corpus_version(channel_id=handbook.pk)
    assert "newcomer" in topic_enum(mcp.result("tools/list")["tools"])


def test_tools_list_follows_channel_settings(mcp, handbook):
    """Saving the channel (its page cap here) changes the definitions served."""
    tools = {t["name"]: t for t in mcp.result("tools/list")["tools"]}
    assert "At most 2 pages" in tools["get_pages"]["description"]
    handbook.max_pages_per_call = 7
    handbook.save()
    tools = {t["name"]: t for t in mcp.result("tools/list")["tools"]}
    assert "At most 7 pages" in tools["get_pages"]["description"]


def test_retrieve_text_chunks_query_count_does_not_grow(
    mcp, handbook, django_assert_max_num_queries
):
    """A search costs the access checks plus a fixed number of retrieval queries
    (scope, terms, keyword leg, vector leg, loading the chunks), for 3 documents
    or 13, and for 2 results or 8; a filter adds a query per value it names."""
    mcp.result("tools/list")
    arguments = {"query": "holiday days", "limit": 2}
    with django_assert_max_num_queries(ACCESS_QUERIES + 8):
        mcp.call_tool_expecting_success("retrieve_text_chunks", arguments)
    add_documents(handbook, 10)
    bump_corpus_version(channel_id=handbook.pk)
    mcp.result("tools/list")
    with django_assert_max_num_queries(ACCESS_QUERIES + 8):
        result = mcp.call_tool_expecting_success(
            "retrieve_text_chunks", {**arguments, "limit": 8}
        )
    assert len(result["structuredContent"]["chunks"]) == 8
    # The filter adds its fields and one indexed existence probe per value.
    filtered = {**arguments, "metadata_filter": {"topic": ["holidays", "extra-3"]}}
    with django_assert_max_num_queries(ACCESS_QUERIES + 8 + 1 + 2):
        result = mcp.call_tool_expecting_success("retrieve_text_chunks", filtered)
    assert {c["document_id"] for c in result["structuredContent"]["chunks"]} <= set(
        Document.objects.filter(
            metadata__topic__in=["holidays", "extra-3"]
        ).values_list("id", flat=True)
    )


def test_rag_search_query_counts(mcp, handbook, django_assert_max_num_queries):
    """An extractive answer costs retrieval plus the answer cache's read and
    write; asking again is served from the cache with two queries past the
    access checks (corpus version, cache read). The sentences are embedded
    first, as prepare_answers_task does after every ingestion, so the count
    does not depend on which earlier test left vectors behind."""
    for document in handbook.documents.filter(status=Document.Status.READY):
        prepare_document(document.pk)
    mcp.result("tools/list")
    question = {"query": "How many holiday days are there?"}
    with django_assert_max_num_queries(ACCESS_QUERIES + 15):
        first = mcp.call_tool_expecting_success("rag_search", question)
    with django_assert_max_num_queries(ACCESS_QUERIES + 2):
        again = mcp.call_tool_expecting_success("rag_search", question)
    assert again["structuredContent"] == first["structuredContent"]


def test_get_pages_query_count(mcp, handbook, django_assert_max_num_queries):
    """Reading pages costs the access checks, the document and its pages."""
    mcp.result("tools/list")
    arguments = {
        "document_id": doc_id("Holiday policy"),
        "page_start": 1,
        "page_end": 2,
        "type": "text",
    }
    with django_assert_max_num_queries(ACCESS_QUERIES + 2):
        result = mcp.call_tool_expecting_success("get_pages", arguments)
    assert "[Document" in result["content"][0]["text"]
