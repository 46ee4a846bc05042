"""The playground in Chromium: log in, open it from the admin, pick filter values,
run each tool, read the results and the JSON panel, follow a citation."""

import json
import os
from pathlib import Path

import pytest

# django_db: the session needs the test database (the tests use it only
# through the live server).
pytestmark = [pytest.mark.slow, pytest.mark.django_db]


def log_in(page, site) -> None:
    page.goto("/admin/login/?next=/admin/")
    page.fill("#id_username", site.username)
    page.fill("#id_password", site.password)
    page.click("input[type=submit]")
    page.wait_for_url("**/admin/")


def open_playground(page, site) -> None:
    log_in(page, site)
    page.goto(f"/playground/{site.slug}/")


def choose_tool(page, tool: str) -> None:
    page.check(f"input[name=tool][value={tool}]")


def run_tool(page) -> None:
    page.click("button.pg-run")
    page.wait_for_selector("#pg-reply-json")


def reply(page) -> dict:
    return json.loads(page.text_content("#pg-reply-json"))


def csp_violations(page) -> list[str]:
    return [text for text in page.console_errors if "Content Security Policy" in text]


def test_staff_reach_the_playground_from_the_admin(page, site):
    """From the admin's channel list, the Playground link in the header leads to
    the channel chooser and on to the channel's form; nothing breaks the CSP on
    the way."""
    log_in(page, site)
    page.goto("/admin/documents/channel/")
    page.click(".quire-nav a[href='/playground/']")
    page.wait_for_url("**/playground/")
    page.click(f"a[href='/playground/{site.slug}/']")
    page.wait_for_url(f"**/playground/{site.slug}/")
    assert page.is_visible("#id_f_kind")
    assert page.is_visible("#id_f_published_start")
    # The admin's own pages still work under the CSP.
    page.goto("/admin/documents/document/")
    assert page.is_visible("#changelist")
    assert csp_violations(page) == []


@pytest.mark.parametrize("tool", ["rag_search", "list_documents", "get_pages"])
def test_the_run_button_is_in_the_first_screen(page, site, tool):
    """At 1280x800, whichever tool is chosen and however many filters the
    channel has, the Run button is visible without scrolling; the tools are
    offered by title."""
    page.set_viewport_size({"width": 1280, "height": 800})
    open_playground(page, site)
    choose_tool(page, tool)
    box = page.locator("button.pg-run").bounding_box()
    assert box is not None
    assert box["x"] >= 0 and box["y"] >= 0
    assert box["x"] + box["width"] <= 1280 and box["y"] + box["height"] <= 800, box
    labels = page.locator(".pg-tools label").all_inner_texts()
    assert "Answer with citations" in [label.strip() for label in labels]


def test_list_documents_with_a_filter_and_the_json_panel(page, site):
    """Picking kind=guide lists only the guides, and the JSON panel holds the
    JSON-RPC reply with the same rows."""
    open_playground(page, site)
    page.check("input[name=tool][value=list_documents]")
    page.select_option("#id_f_kind", ["guide"])
    page.click("button.pg-run")
    page.wait_for_selector(".pg-table")
    titles = page.locator(".pg-table tbody tr td:nth-child(2)").all_inner_texts()
    assert sorted(titles) == [
        "Filtering by metadata",
        "Quire: frequently asked questions",
    ]
    result = reply(page)["result"]
    assert result["structuredContent"]["total_count"] == 2
    assert {row["title"] for row in result["structuredContent"]["results"]} == set(
        titles
    )
    assert csp_violations(page) == []


def test_fields_follow_the_tool(page, site):
    """The query box shows for the search tools only, and "latest" disables the
    date range (the page's own script, allowed by the CSP)."""
    open_playground(page, site)
    page.check("input[name=tool][value=list_documents]")
    assert not page.is_visible("#id_query")
    page.check("input[name=tool][value=rag_search]")
    assert page.is_visible("#id_query")
    page.check("#id_f_published_latest")
    assert page.is_disabled("#id_f_published_start")
    assert csp_violations(page) == []


def test_retrieve_text_chunks_marks_query_terms(page, site):
    """Passages show their document, page and score with the query words marked,
    beside the chunks in the JSON reply."""
    open_playground(page, site)
    choose_tool(page, "retrieve_text_chunks")
    page.fill("#id_query", "self-locking nuts")
    run_tool(page)
    first = page.locator(".pg-chunk").first
    assert "score" in first.inner_text()
    marks = page.locator(".pg-chunk mark").all_inner_texts()
    assert any(mark.lower().startswith("nut") for mark in marks)
    chunks = reply(page)["result"]["structuredContent"]["chunks"]
    assert chunks and chunks[0]["document_title"] in first.inner_text()


def test_rag_search_citation_opens_the_page(page, site):
    """A filtered rag_search answer cites its pages; following a citation opens
    the page's text beside its image in the admin's page preview."""
    open_playground(page, site)
    choose_tool(page, "rag_search")
    page.select_option("#id_f_kind", ["handbook"])
    page.fill("#id_query", "What is a self-locking nut used for?")
    run_tool(page)
    handbook = site.document_ids["faa-amt-handbook-self-locking-nuts.pdf"]
    citation = page.locator(".pg-answer a.citation").first
    assert citation.inner_text() == f"[Document {handbook}, Page 1]"
    arguments = json.loads(page.text_content("#pg-request-json"))["params"]["arguments"]
    assert arguments["metadata_filter"] == {"kind": "handbook"}
    assert reply(page)["result"]["structuredContent"]["citations"]
    listed = page.locator(".pg-citations a.citation").first.inner_text()
    assert listed.endswith(", page 1") and not listed.startswith("[Document")
    target = os.environ.get("QUIRE_PLAYGROUND_SCREENSHOT")
    if target:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=target)
    page.goto(f"/admin/documents/document/{handbook}/pages/1/")
    image = page.locator(".pv-sheet img")
    image.wait_for()
    assert page.evaluate("img => img.naturalWidth", image.element_handle()) > 0
    assert "self-locking" in page.text_content(".pv-text-body").lower()
    assert csp_violations(page) == []


def test_a_citation_opens_the_page_with_the_quoted_lines_highlighted(page, site):
    """Following a citation of a rag_search answer from the playground opens
    the cited page: its image with the quoted lines highlighted on it, and the
    quote beside it, under the site's CSP."""
    open_playground(page, site)
    choose_tool(page, "rag_search")
    page.select_option("#id_f_kind", ["handbook"])
    page.fill("#id_query", "What does a Boots self-locking nut hold tight against?")
    run_tool(page)
    cited = reply(page)["result"]["structuredContent"]["citations"][0]
    assert cited["regions"]
    page.locator(".pg-citations a.citation").first.click()
    page.wait_for_url("**/citations/*/page#quote")
    image = page.locator(".cited-sheet img")
    image.wait_for()
    assert (
        page.evaluate("img => img.complete && img.naturalWidth", image.element_handle())
        > 0
    )
    marks = page.locator("rect.cited-mark")
    assert marks.count() == len(cited["regions"])
    sheet = image.bounding_box()
    for index in range(marks.count()):
        box = marks.nth(index).bounding_box()
        # Drawn on the image, where the region says (fractions of the page).
        region = cited["regions"][index]
        assert abs(box["x"] - (sheet["x"] + region["x0"] * sheet["width"])) < 3
        assert abs(box["y"] - (sheet["y"] + region["y0"] * sheet["height"])) < 3
        assert box["width"] > 10 and box["height"] > 3
    fill = marks.first.evaluate("m => getComputedStyle(m).fill")
    assert fill.startswith("rgba(255, 212, 0")  # the stylesheet applies
    assert page.inner_text(".cited-quote") == cited["quote"]
    assert csp_violations(page) == []
    target = os.environ.get("QUIRE_CITATION_SCREENSHOT")
    if target:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=target)


def test_get_pages_shows_the_page_image(page, site):
    """get_pages shows the page image the agent receives (a data: URL the CSP
    allows) beside its text."""
    open_playground(page, site)
    handbook = site.document_ids["faa-amt-handbook-self-locking-nuts.pdf"]
    choose_tool(page, "get_pages")
    page.fill("#id_document_id", str(handbook))
    run_tool(page)
    image = page.locator(".pg-page img")
    assert page.evaluate("img => img.naturalWidth", image.element_handle()) > 0
    assert "base64 characters in all" in page.inner_text("#pg-reply-json")
    assert csp_violations(page) == []


def test_errors_show_as_the_agent_sees_them(page, site):
    """A date range that ends before it starts shows the tool error text."""
    open_playground(page, site)
    choose_tool(page, "retrieve_text_chunks")
    page.fill("#id_f_published_start", "2026-12-01")
    page.fill("#id_f_published_end", "2020-01-01")
    page.fill("#id_query", "filters")
    run_tool(page)
    error = page.inner_text(".pg-error")
    assert "is after end" in error
    assert reply(page)["result"]["isError"] is True


def test_admin_forms_work_under_the_csp(page, site):
    """The admin's channel form (inline field rows), a document, its title and
    metadata form, a page preview and the upload form render and run their
    scripts without a CSP violation (no inline style or script without the
    request's nonce)."""
    log_in(page, site)
    handbook = site.document_ids["faa-amt-handbook-self-locking-nuts.pdf"]
    page.goto("/admin/documents/channel/")
    page.click(f"#result_list a:text-is('{site.channel_name}')")
    page.wait_for_selector(".inline-group")
    page.click(".inline-group .add-row a")  # the admin's inline JavaScript
    page.goto(f"/admin/documents/document/{handbook}/change/")
    assert page.is_visible("#content-main")
    # The page's own styled buttons (a <style> block with the nonce) apply.
    button = page.locator(".object-tools .quire-inline-form button")
    assert button.evaluate("b => getComputedStyle(b).borderRadius") == "15px"
    page.click("text=Edit title and metadata")
    assert page.is_visible("#document_metadata_form")
    page.goto(f"/admin/documents/document/{handbook}/pages/1/")
    assert (
        page.locator(".pv-body").evaluate("e => getComputedStyle(e).display") == "flex"
    )
    page.goto("/admin/documents/document/upload/")
    assert page.is_visible("#content-main")
    assert csp_violations(page) == []


def test_api_docs_run_from_local_files_under_the_csp(page, site):
    """The interactive API docs load Swagger UI from this server and render the
    operations, with no CSP violation and no request to another origin."""
    origins = set()
    page.on("request", lambda request: origins.add(request.url.split("/")[2]))
    page.goto("/api/docs")
    page.wait_for_selector(".opblock", timeout=20_000)
    assert page.locator(".opblock").count() >= 10
    assert origins == {site.base_url.split("/")[2]}
    assert csp_violations(page) == []


def test_playground_works_without_javascript(browser, site):
    """With JavaScript off every field shows and the form still runs a tool."""
    context = browser.new_context(base_url=site.base_url, java_script_enabled=False)
    try:
        page = context.new_page()
        log_in(page, site)
        page.goto("/playground/")
        page.click(f"a[href='/playground/{site.slug}/']")
        page.select_option("#id_channel", site.slug)
        page.click(".pg-channel-form button")  # shown only without JavaScript
        page.wait_for_url(f"**/playground/{site.slug}/")
        assert page.is_visible("#id_query") and page.is_visible("#id_document_id")
        choose_tool(page, "retrieve_text_chunks")
        page.fill("#id_query", "metadata filters")
        run_tool(page)
        assert page.locator(".pg-chunk").count() > 0
    finally:
        context.close()
