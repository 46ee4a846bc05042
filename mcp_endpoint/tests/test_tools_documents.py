"""list_documents, get_pages, get_citation_url and the citation view."""

import json
import re
import time

import pytest
from asgiref.sync import async_to_sync
from jsonschema.validators import validator_for

from documents.ingestion import formats
from documents.models import Document
from documents.tests.corpus import mark_synced
from mcp_endpoint.tests.conftest import McpClient, decode_png, doc_id

pytestmark = pytest.mark.django_db


# --- list_documents ----------------------------------------------------------------


def test_list_documents_newest_first_by_channel_sort(mcp_any):
    """Ready documents only, newest year first, with metadata fields; the text
    block carries the same JSON as structuredContent."""
    result = mcp_any.call_tool_expecting_success("list_documents")
    page = result["structuredContent"]
    assert page["total_count"] == 3
    assert [row["title"] for row in page["results"]] == [
        "Security handbook",
        "Holiday policy",
        "Expense rules",
    ]
    assert page["results"][0]["year"] == 2025
    assert page["results"][1]["number_of_pages"] == 3
    # Told apart from a namesake in another format by file name and format.
    assert page["results"][1]["file_name"].endswith(".txt")
    assert page["results"][1]["format"] == "plain text"
    assert page["results"][1]["revision"] == 1
    assert page["results"][1]["revised_at"].startswith("20")
    assert json.loads(result["content"][0]["text"]) == page


def test_list_documents_oldest_first(mcp):
    """newest_first=false reverses the channel's sort."""
    page = mcp.call_tool_expecting_success("list_documents", {"newest_first": False})
    assert page["structuredContent"]["results"][0]["title"] == "Expense rules"


def test_list_documents_pages_through_results(mcp):
    """offset and limit page through the list."""
    first = mcp.call_tool_expecting_success("list_documents", {"limit": 2})
    rest = mcp.call_tool_expecting_success("list_documents", {"offset": 2, "limit": 2})
    titles = [r["title"] for r in first["structuredContent"]["results"]]
    titles += [r["title"] for r in rest["structuredContent"]["results"]]
    assert len(set(titles)) == 3


def test_list_documents_pages_with_a_signed_cursor(mcp_any):
    """Each page but the last carries nextCursor; passing it back as cursor
    gives the next page of the same listing (filter and order kept), in both
    eras, and the last page has none."""
    first = mcp_any.call_tool_expecting_success(
        "list_documents", {"limit": 2, "newest_first": False}
    )["structuredContent"]
    assert first["offset"] == 0 and isinstance(first["nextCursor"], str)
    second = mcp_any.call_tool_expecting_success(
        "list_documents", {"cursor": first["nextCursor"]}
    )["structuredContent"]
    assert second["offset"] == 2 and second["limit"] == 2
    assert "nextCursor" not in second
    titles = [row["title"] for row in first["results"] + second["results"]]
    assert titles == ["Expense rules", "Holiday policy", "Security handbook"]


def test_list_documents_cursor_keeps_the_filter(mcp):
    """A cursor carries the listing's metadata_filter: the next page is still
    filtered, and a cursor may not be combined with a new filter or offset."""
    years = {"year": {"min": 2024}}
    filtered = mcp.call_tool_expecting_success(
        "list_documents", {"metadata_filter": years, "limit": 1}
    )["structuredContent"]
    assert filtered["total_count"] == 2
    rest = mcp.call_tool_expecting_success(
        "list_documents", {"cursor": filtered["nextCursor"]}
    )["structuredContent"]
    assert [row["title"] for row in rest["results"]] == ["Holiday policy"]
    assert rest["total_count"] == 2 and "nextCursor" not in rest
    page = mcp.call_tool_expecting_success("list_documents", {"limit": 1})
    cursor = page["structuredContent"]["nextCursor"]
    text = mcp.call_tool_expecting_error(
        "list_documents", {"cursor": cursor, "offset": 0}
    )
    assert "leave out offset" in text


def test_list_documents_refuses_forged_or_foreign_cursors(mcp, papers, papers_key):
    """A cursor is signed for its channel: a changed one, or one from another
    channel, is a tool error saying to list again."""
    cursor = mcp.call_tool_expecting_success("list_documents", {"limit": 1})[
        "structuredContent"
    ]["nextCursor"]
    forged = cursor[:-2] + ("AA" if not cursor.endswith("AA") else "BB")
    assert "not valid" in mcp.call_tool_expecting_error(
        "list_documents", {"cursor": forged}
    )
    other = McpClient("papers", papers_key, "modern")
    assert "another listing" in other.call_tool_expecting_error(
        "list_documents", {"cursor": cursor}
    )


def test_list_documents_output_schema_names_next_cursor(mcp):
    """The output schema lists nextCursor, so clients validating
    structuredContent accept a page that carries it."""
    tools = {tool["name"]: tool for tool in mcp.result("tools/list")["tools"]}
    schema = tools["list_documents"]["outputSchema"]
    assert schema["properties"]["nextCursor"]["type"] == "string"
    assert "cursor" in tools["list_documents"]["inputSchema"]["properties"]
    page = mcp.call_tool_expecting_success("list_documents", {"limit": 1})
    validator_for(schema)(schema).validate(page["structuredContent"])


def test_list_documents_caps_limit(mcp, settings):
    """A limit over MCP_LIST_LIMIT_MAX is capped, not refused."""
    settings.MCP_LIST_LIMIT_MAX = 2
    page = mcp.call_tool_expecting_success("list_documents", {"limit": 500})
    assert page["structuredContent"]["limit"] == 2
    assert len(page["structuredContent"]["results"]) == 2


def test_list_documents_filters(mcp):
    """metadata_filter narrows the list."""
    page = mcp.call_tool_expecting_success(
        "list_documents", {"metadata_filter": {"topic": "holidays"}}
    )
    assert [r["title"] for r in page["structuredContent"]["results"]] == [
        "Holiday policy"
    ]


def test_list_documents_bad_filter_is_a_tool_error(mcp):
    """An unknown filter field is an isError result naming the allowed fields."""
    text = mcp.call_tool_expecting_error(
        "list_documents", {"metadata_filter": {"colour": "red"}}
    )
    assert "topic" in text and "year" in text


def test_newest_first_is_refused_without_newest_sort(papers, papers_key):
    """Where the schema has no newest_first, sending it is a tool error."""
    client = McpClient("papers", papers_key)
    text = client.call_tool_expecting_error("list_documents", {"newest_first": True})
    assert "newest_first" in text


GUIDE_URL = "https://handbook.example/holidays"


@pytest.fixture
def synced_holidays(handbook):
    """Holiday policy as a sync of the handbook's website leaves it."""
    return mark_synced(
        Document.objects.get(title="Holiday policy"), key=GUIDE_URL, url=GUIDE_URL
    )


def assert_matches_output_schema(client: McpClient, tool: str, structured: dict):
    """`structured` is valid against the outputSchema tools/list declares for
    `tool` in the client's channel (as the SDK client checks it)."""
    tools = {t["name"]: t for t in client.result("tools/list")["tools"]}
    schema = tools[tool]["outputSchema"]
    validator = validator_for(schema)
    validator.check_schema(schema)
    errors = [error.message for error in validator(schema).iter_errors(structured)]
    assert errors == []


def test_list_documents_rows_carry_source_and_source_url(mcp_any, synced_holidays):
    """A synced web page's row names its source and its public URL; an upload's
    row has null for both; the result matches the declared outputSchema."""
    result = mcp_any.call_tool_expecting_success("list_documents")
    page = result["structuredContent"]
    rows = {row["title"]: row for row in page["results"]}
    assert rows["Holiday policy"]["source"] == "Handbook site"
    assert rows["Holiday policy"]["source_url"] == GUIDE_URL
    assert (rows["Expense rules"]["source"], rows["Expense rules"]["source_url"]) == (
        None,
        None,
    )
    assert json.loads(result["content"][0]["text"]) == page
    assert_matches_output_schema(mcp_any, "list_documents", page)


def test_list_documents_schema_check_fails_on_a_wrong_source_url(mcp):
    """The schema check above can fail: the declared outputSchema requires
    source_url in every row, a string or null."""
    page = mcp.call_tool_expecting_success("list_documents")["structuredContent"]
    row = page["results"][0]
    without = {name: value for name, value in row.items() if name != "source_url"}
    for wrong in ({**row, "source_url": 7}, without):
        with pytest.raises(AssertionError):
            assert_matches_output_schema(
                mcp, "list_documents", {**page, "results": [wrong]}
            )


@pytest.mark.parametrize(
    "arguments, expected",
    [
        ({"limit": 0}, "limit"),
        ({"offset": -1}, "offset"),
        ({"limit": "many"}, "limit"),
        ({"surprise": 1}, "surprise"),
    ],
)
def test_list_documents_invalid_arguments_are_tool_errors(mcp_any, arguments, expected):
    """Argument validation failures are isError results naming the argument."""
    text = mcp_any.call_tool_expecting_error("list_documents", arguments)
    assert expected in text


# --- get_pages ----------------------------------------------------------------------


def test_get_pages_text_and_image(mcp_any):
    """Each page: its label, its text, and its PNG image when asked for both."""
    document = doc_id("Holiday policy")
    result = mcp_any.call_tool_expecting_success(
        "get_pages", {"document_id": document, "page_start": 1, "page_end": 2}
    )
    content = result["content"]
    assert content[0] == {"type": "text", "text": f"[Document {document}, Page 1]"}
    assert "twenty five days" in content[1]["text"]
    assert content[2]["type"] == "image" and content[2]["mimeType"] == "image/png"
    assert decode_png(content[2]["data"]).size == (8, 8)
    assert content[3]["text"] == f"[Document {document}, Page 2]"
    assert "carried over" in content[4]["text"]
    assert content[5]["text"].startswith(f"(Document {document} is at revision 1, ")
    assert len(content) == 6  # page 2 has no stored image


def test_get_pages_of_an_upload_ends_with_its_revision_only(mcp):
    """An uploaded document's last block is its revision line, no source."""
    document = doc_id("Expense rules")
    content = mcp.call_tool_expecting_success(
        "get_pages", {"document_id": document, "page_start": 1, "page_end": 1}
    )["content"]
    last = content[-1]["text"]
    assert re.fullmatch(
        rf"\(Document {document} is at revision 1, revised .+\.\)", last
    )


def test_get_pages_of_a_synced_page_names_its_source_and_url(mcp_any, synced_holidays):
    """A synced web page's last block adds "source: <name>" and
    "source_url: <url>", one a line, after the revision line."""
    document = synced_holidays.pk
    content = mcp_any.call_tool_expecting_success(
        "get_pages", {"document_id": document, "page_start": 1, "page_end": 1}
    )["content"]
    lines = content[-1]["text"].split("\n")
    assert lines[0].startswith(f"(Document {document} is at revision 1, ")
    assert lines[1:] == ["source: Handbook site", f"source_url: {GUIDE_URL}"]


def test_get_pages_never_gives_out_a_javascript_source_url(mcp, synced_holidays):
    """A stored source URL that is not http(s) is left out; the source's name
    stays."""
    mark_synced(synced_holidays, key="x", url="javascript:alert(1)")
    content = mcp.call_tool_expecting_success(
        "get_pages",
        {"document_id": synced_holidays.pk, "page_start": 1, "page_end": 1},
    )["content"]
    assert content[-1]["text"].split("\n")[1:] == ["source: Handbook site"]
    assert "javascript" not in json.dumps(content)


def test_get_pages_marks_pages_read_by_ocr(mcp_any):
    """A page whose text came from OCR says so after its label; the label stays
    the one to cite."""
    from documents.models import Page

    document = doc_id("Holiday policy")
    Page.objects.filter(document_id=document, number=2).update(ocr=True)
    result = mcp_any.call_tool_expecting_success(
        "get_pages", {"document_id": document, "page_start": 1, "page_end": 2}
    )
    labels = [
        block["text"]
        for block in result["content"]
        if "[Document" in block.get("text", "")
    ]
    assert labels == [
        f"[Document {document}, Page 1]",
        f"[Document {document}, Page 2] (text read by OCR)",
    ]


def test_get_pages_text_only(mcp):
    """type=text returns no images."""
    result = mcp.call_tool_expecting_success(
        "get_pages",
        {
            "document_id": doc_id("Holiday policy"),
            "page_start": 1,
            "page_end": 1,
            "type": "text",
        },
    )
    assert [block["type"] for block in result["content"]] == ["text"] * 3


def test_get_pages_over_the_cap_is_a_tool_error(mcp):
    """More pages than the channel's cap is an error naming cap and count."""
    text = mcp.call_tool_expecting_error(
        "get_pages",
        {"document_id": doc_id("Holiday policy"), "page_start": 1, "page_end": 3},
    )
    assert "At most 2 pages" in text and "asked for 3" in text


def test_get_pages_reversed_range_is_a_tool_error(mcp):
    """page_start after page_end is an error."""
    text = mcp.call_tool_expecting_error(
        "get_pages",
        {"document_id": doc_id("Holiday policy"), "page_start": 2, "page_end": 1},
    )
    assert "after page_end" in text


def test_get_pages_outside_the_document_says_which_pages_exist(mcp):
    """A range beyond the document names the pages that exist."""
    text = mcp.call_tool_expecting_error(
        "get_pages",
        {"document_id": doc_id("Expense rules"), "page_start": 2, "page_end": 3},
    )
    assert "pages 1 to 1" in text


def test_get_pages_of_unknown_or_unready_documents_are_errors(mcp, papers):
    """Documents of other channels, pending ones and missing ids are errors."""
    for document in (doc_id("Protein folding"), doc_id("Draft"), 999999):
        text = mcp.call_tool_expecting_error(
            "get_pages", {"document_id": document, "page_start": 1, "page_end": 1}
        )
        assert "list_documents" in text


# --- get_citation_url and the citation view ------------------------------------


def test_citation_links_open_the_original(mcp):
    """get_citation_url returns signed links keyed by id that serve the file;
    unknown ids are left out."""
    document = doc_id("Expense rules")
    result = mcp.call_tool_expecting_success(
        "get_citation_url", {"document_ids": [document, 999999]}
    )
    urls = result["structuredContent"]
    assert list(urls) == [str(document)]
    assert urls[str(document)].startswith("http://testserver/citations/")
    response = async_to_sync(mcp.client.get)(
        urls[str(document)].removeprefix("http://testserver")
    )
    assert response.status_code == 200
    assert b"".join(response.streaming_content).startswith(b"Travel expenses")
    assert response["Content-Disposition"].startswith("inline")


def test_citation_links_to_pdfs_carry_the_page(mcp):
    """With page_number, a PDF link ends with #page=<n>; other files don't."""
    Document.objects.filter(title="Holiday policy").update(
        content_type="application/pdf"
    )
    holidays, expenses = doc_id("Holiday policy"), doc_id("Expense rules")
    urls = mcp.call_tool_expecting_success(
        "get_citation_url", {"document_ids": [holidays, expenses], "page_number": 2}
    )["structuredContent"]
    assert urls[str(holidays)].endswith("#page=2")
    assert "#" not in urls[str(expenses)]


def citation_path(mcp, document: int) -> str:
    urls = mcp.call_tool_expecting_success(
        "get_citation_url", {"document_ids": [document]}
    )["structuredContent"]
    return urls[str(document)].removeprefix("http://testserver")


def test_tampered_citation_link_is_refused(mcp):
    """A link whose signature or payload was altered gets 403."""
    path = citation_path(mcp, doc_id("Expense rules"))
    prefix, _, signature = path.rpartition(":")
    flipped = ("A" if signature[0] != "A" else "B") + signature[1:]
    assert async_to_sync(mcp.client.get)(f"{prefix}:{flipped}").status_code == 403
    other = citation_path(mcp, doc_id("Security handbook"))
    spliced = other.split(":")[0] + ":" + path.split(":", 1)[1]
    assert async_to_sync(mcp.client.get)(spliced).status_code == 403


def test_expired_citation_link_is_gone(mcp, monkeypatch, settings):
    """A link older than CITATION_URL_MAX_AGE gets 410."""
    from django.core import signing

    path = citation_path(mcp, doc_id("Expense rules"))
    later = time.time() + settings.CITATION_URL_MAX_AGE + 5
    monkeypatch.setattr(signing.time, "time", lambda: later)
    assert async_to_sync(mcp.client.get)(path).status_code == 410


def test_citation_link_for_other_channel_document_needs_its_channel(mcp, papers):
    """get_citation_url never links to another channel's documents."""
    urls = mcp.call_tool_expecting_success(
        "get_citation_url", {"document_ids": [doc_id("Protein folding")]}
    )["structuredContent"]
    assert urls == {}


def test_citation_url_needs_ids(mcp):
    """An empty id list is a tool error."""
    text = mcp.call_tool_expecting_error("get_citation_url", {"document_ids": []})
    assert "document_ids" in text


def test_list_documents_query_count_does_not_grow(
    mcp, handbook, fake_embedder, django_assert_max_num_queries
):
    """Listing a page of documents costs the same queries for 3 or 13 documents."""
    from documents.tests.corpus import add_document

    with django_assert_max_num_queries(12):
        mcp.call_tool_expecting_success("list_documents", {"limit": 50})
    for number in range(10):
        add_document(
            handbook,
            title=f"Extra {number}",
            pages=["x"],
            metadata={"topic": "holidays", "year": 2000 + number},
        )
    with django_assert_max_num_queries(12):
        page = mcp.call_tool_expecting_success("list_documents", {"limit": 50})
    assert page["structuredContent"]["total_count"] == 13


def test_get_pages_describes_the_page_model_of_every_format(mcp):
    """The description a model reads says how each format in the format table
    becomes pages, in the table's own words."""
    tools = {t["name"]: t for t in mcp.result("tools/list")["tools"]}
    description = tools["get_pages"]["description"]
    for fmt in formats.FORMATS:
        assert fmt.label in description, fmt.label
        assert fmt.pages in description, fmt.pages
