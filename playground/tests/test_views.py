"""The staff playground: access, the generated filter form, each tool's readable
result beside the exact MCP reply, errors as the agent sees them, and its CSP."""

import html
import json
import re

import pytest
from django.contrib.auth.models import Permission, User

from documents.tests.corpus import add_document
from mcp_endpoint.tests.conftest import McpClient, doc_id


@pytest.fixture
def staff(admin_client):
    return admin_client


def run(client, slug: str = "handbook", **params):
    """Run a tool as the form does: tools run on POST only."""
    return client.post(f"/playground/{slug}/", params)


def test_playground_needs_a_staff_login(client, handbook):
    """Anonymous visitors are sent to the admin login."""
    response = client.get("/playground/handbook/")
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


def test_channel_list_and_choice(staff, handbook, papers):
    """The index lists channels; choosing one opens its playground."""
    response = staff.get("/playground/")
    assert b"/playground/handbook/" in response.content
    assert b"/playground/papers/" in response.content
    chosen = staff.get("/playground/", {"channel": "papers"})
    assert chosen["Location"] == "/playground/papers/"
    assert staff.get("/playground/", {"channel": "no such/one"}).status_code == 200


def test_admin_channel_list_links_to_the_playground(staff, handbook):
    """The channel list in the admin has a Playground link (in the header every
    admin page shares)."""
    response = staff.get("/admin/documents/channel/")
    assert b'href="/playground/"' in response.content


def test_filter_form_follows_the_filter_schema(staff, handbook):
    """Only fields MCP clients may filter on appear: strings as a choice of the
    values in use, numbers as a range."""
    page = staff.get("/playground/handbook/").content.decode()
    assert 'name="f_topic" multiple' in page
    for value in ("expenses", "holidays", "security"):
        assert f'<option value="{value}">' in page
    assert 'name="f_year_min"' in page and 'name="f_year_max"' in page
    assert "f_team" not in page  # not filterable
    assert "newest_first" in page  # the channel sorts newest first


def test_tools_follow_the_channel(staff, papers):
    """Tools switched off in the channel are not offered."""
    page = staff.get("/playground/papers/").content.decode()
    assert 'value="retrieve_text_chunks"' in page
    assert 'value="rag_search"' not in page


def test_list_documents_matches_what_an_mcp_client_gets(staff, handbook, handbook_key):
    """A filtered list shows its rows, and the reply is the one an MCP client
    receives for the same arguments."""
    response = run(
        staff,
        tool="list_documents",
        f_topic=["holidays", "security"],
        f_year_min="2024",
    )
    call = response.context["call"]
    assert call.request["params"]["arguments"] == {
        "metadata_filter": {"topic": ["holidays", "security"], "year": {"min": 2024}},
        "offset": 0,
        "limit": 10,
        "newest_first": True,
    }
    expected = McpClient("handbook", handbook_key, "legacy").call_tool(
        "list_documents", call.request["params"]["arguments"]
    )
    assert call.reply["result"] == expected
    page = response.content.decode()
    assert "Security handbook" in page and "Holiday policy" in page
    assert "Expense rules" not in page
    shown = json.loads(
        html.unescape(page.split('id="pg-reply-json">')[1].split("</pre>")[0])
    )
    assert shown["result"] == expected


def test_list_documents_pages(staff, handbook):
    """Document lists page by ten with previous/next buttons."""
    for number in range(12):
        add_document(
            handbook,
            title=f"Memo {number:02}",
            pages=["A memo."],
            metadata={"topic": "memos", "year": 2000 + number},
        )
    first = run(staff, tool="list_documents")
    assert first.context["total"] == 15
    assert first.context["next_page"] == 2 and not first.context.get("previous_page")
    assert b'name="page" value="2"' in first.content
    second = run(staff, tool="list_documents", page="2")
    assert second.context["first"] == 11 and second.context["last"] == 15
    assert second.context["previous_page"] == 1


def test_chunks_show_title_page_score_and_highlight_escaped_text(staff, handbook):
    """Passages show their document, page and score, with query words marked in
    text that was escaped first."""
    add_document(
        handbook,
        title="Tricky <b>title</b>",
        pages=["Holiday <script>alert(1)</script> rules & more holiday days."],
        metadata={"topic": "tricky", "year": 2020},
    )
    response = run(staff, tool="retrieve_text_chunks", query="holiday days")
    page = response.content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert(1)" not in page
    assert "Tricky &lt;b&gt;title&lt;/b&gt;" in page
    assert "<mark>Holiday</mark>" in page and "<mark>days</mark>" in page
    assert "&amp; more" in page
    chunk = response.context["chunks"][0]
    assert f"page {chunk['page_number']}" in page
    assert re.fullmatch(r"http://testserver/citations/[^/]+/page#quote", chunk["url"])
    assert f'href="{chunk["url"]}"' in page


def _opened(client, url: str):
    return client.get(url.removeprefix("http://testserver").removesuffix("#quote"))


@pytest.fixture
def reader(client, handbook):
    """A staff member who reads the handbook but curates nothing."""
    user = User.objects.create_user("rhea", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_document"))
    handbook.readers.add(user)
    client.force_login(user)
    return client


def test_a_readers_links_open_and_end_with_their_access(reader, handbook):
    """Issue 19: the playground's page links opened a curators-only admin
    preview (404 for a reader). They are page links signed for the reader,
    re-admitted by the caller rule: they open (200) and stop (403) once the
    reader is removed from the channel."""
    chunks = run(reader, tool="retrieve_text_chunks", query="holiday days")
    pages = run(
        reader,
        tool="get_pages",
        document_id=str(doc_id("Holiday policy")),
        page_start="1",
        page_end="1",
    )
    urls = [chunk["url"] for chunk in chunks.context["chunks"]]
    urls += [page.url for page in pages.context["pages"]]
    assert urls
    for url in urls:
        assert _opened(reader, url).status_code == 200, url
    handbook.readers.clear()
    for url in urls:
        assert _opened(reader, url).status_code == 403, url


def test_rag_search_citations_open_the_cited_page(staff, handbook):
    """The answer's [Document <id>, Page <n>] labels and the listed citations
    (with their quotes) link to the citation's page view: the page with the
    quoted lines highlighted."""
    response = run(
        staff,
        tool="rag_search",
        query="How many days of paid holiday do employees receive?",
        f_topic="holidays",
    )
    holiday = doc_id("Holiday policy")
    page = response.content.decode()
    citation = response.context["citations"][0]
    assert citation["document_id"] == holiday
    assert re.fullmatch(
        r"http://testserver/citations/[^/]+/page#quote", citation["url"]
    )
    link = f'<a class="citation" href="{citation["url"]}">'
    assert link + f"[Document {holiday}, Page 1]</a>" in page  # in the answer
    assert link + "Holiday policy, page 1</a>" in page  # the list: its title
    assert page.count(link) == 2
    opened = staff.get(
        citation["url"].removeprefix("http://testserver")[: -len("#quote")]
    )
    assert opened.status_code == 200
    assert "twenty five days" in opened.content.decode()
    arguments = response.context["call"].request["params"]["arguments"]
    assert arguments["metadata_filter"] == {"topic": "holidays"}


def test_get_pages_shows_text_and_image(staff, handbook):
    """Pages show their text and image; long image data is cut in the JSON panel
    only, with a note."""
    holiday = doc_id("Holiday policy")
    response = run(
        staff, tool="get_pages", document_id=str(holiday), page_start="1", page_end="2"
    )
    pages = response.context["pages"]
    assert [p.number for p in pages] == [1, 2]
    assert pages[0].image.startswith("data:image/png;base64,")
    assert "twenty five days" in pages[0].texts[0]
    full = response.context["call"].reply["result"]["content"]
    assert any(block["type"] == "image" for block in full)


def test_errors_are_shown_as_the_agent_sees_them(staff, handbook):
    """A bad filter value and a bad page range show the tool's own error text."""
    response = run(staff, tool="list_documents", f_year_min="abc")
    error = response.context["call"].tool_error
    assert error and "year.min" in error
    assert html.escape(error) in response.content.decode()
    pages = run(staff, tool="get_pages", document_id="999999")
    assert "no document 999999" in pages.context["call"].tool_error


def test_empty_results_say_so(staff, handbook):
    """A search whose filter leaves no document says the agent gets an empty
    list."""
    response = run(
        staff, tool="retrieve_text_chunks", query="holiday", f_year_min="3000"
    )
    assert response.context["call"].structured == {"chunks": []}
    assert b"No passages found" in response.content


def test_schema_and_mcp_servers_snippet(staff, handbook):
    """The tool's input schema for the channel and a copyable mcpServers entry
    are on the page."""
    response = staff.get("/playground/handbook/", {"tool": "retrieve_text_chunks"})
    schema = json.loads(response.context["input_schema"])
    topic = schema["properties"]["metadata_filter"]["anyOf"][0]["properties"]["topic"]
    assert "holidays" in topic["anyOf"][0]["enum"]
    snippet = json.loads(response.context["mcp_servers"])
    entry = snippet["mcpServers"]["quire-handbook"]
    assert entry["url"] == "http://testserver/mcp/handbook"
    assert entry["headers"]["Authorization"].startswith("Bearer ")


def test_playground_has_a_strict_csp(staff, handbook):
    """No inline script or style and nothing from other origins."""
    policy = staff.get("/playground/handbook/")["Content-Security-Policy"]
    assert "script-src 'self'" in policy
    assert "style-src 'self';" in policy + ";"
    assert "unsafe-inline" not in policy
    admin_policy = staff.get("/admin/")["Content-Security-Policy"]
    assert "default-src 'self'" in admin_policy


@pytest.fixture
def notices(make_channel, fake_embedder):
    channel = make_channel(
        "notices",
        fields=[
            {"name": "published", "type": "date", "filterable": True},
            {"name": "urgent", "type": "boolean", "filterable": True},
            {"name": "tags", "type": "string_list", "filterable": True},
        ],
    )
    for day, urgent, tags in [(1, True, ["it"]), (9, False, ["it", "hr"])]:
        add_document(
            channel,
            title=f"Notice {day}",
            pages=[f"Notice of day {day}."],
            metadata={"published": f"2025-01-0{day}", "urgent": urgent, "tags": tags},
        )
    return channel


def test_dates_booleans_and_lists_become_the_filter_an_agent_sends(staff, notices):
    """Date ranges, "latest", true/false and list values are sent in the shapes
    the filter schema describes."""
    ranged = run(
        staff,
        "notices",
        tool="list_documents",
        f_published_start="2025-01-01",
        f_urgent="false",
        f_tags=["hr", "it"],
    )
    arguments = ranged.context["call"].request["params"]["arguments"]
    assert arguments["metadata_filter"] == {
        "published": {"start": "2025-01-01"},
        "urgent": False,
        "tags": ["hr", "it"],
    }
    assert [row["title"] for row in ranged.context["documents"]] == ["Notice 9"]
    latest = run(
        staff,
        "notices",
        tool="list_documents",
        f_published_start="2020-01-01",
        f_published_latest="on",
    )
    assert latest.context["call"].request["params"]["arguments"]["metadata_filter"] == {
        "published": "latest"
    }
    assert [row["title"] for row in latest.context["documents"]] == ["Notice 9"]
    page = staff.get("/playground/notices/").content.decode()
    assert 'type="date"' in page and 'name="f_published_latest"' in page
    assert 'name="f_tags" multiple' in page
    assert '<option value="true">true</option>' in page


def test_tools_are_offered_by_title_and_dates_by_two_pickers(staff, handbook):
    """The tool choices read as the registry's titles (the code name only as a
    tooltip), the Run button comes straight after the query, and a date field
    is two date inputs with no schema text under them."""
    page = staff.get(f"/playground/{handbook.slug}/").content.decode()
    assert "> Answer with citations</label>" in page
    assert "<code>rag_search</code></label>" not in page
    assert page.index('class="pg-run"') < page.index('id="id_document_ids"')


def test_a_date_filter_is_two_pickers_without_schema_text(staff, notices):
    """A date field shows from/to date inputs and no JSON from its schema."""
    page = staff.get("/playground/notices/").content.decode()
    assert 'id="id_f_published_start"' in page and 'id="id_f_published_end"' in page
    assert len(re.findall(r'<input [^>]*type="date"', page)) == 2
    date_block = page[page.index('data-field-type="date"') :]
    date_block = date_block[: date_block.index("data-field-type", 10)]
    assert "{" not in date_block and "pg-help" not in date_block
