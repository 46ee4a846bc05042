"""The page viewer (MCP Apps, SEP-1865): offered only to clients that declare
the extension, in both eras; the app-only tool reads pages under the caller's
key like every other call; the view's HTML stays inside its declared CSP."""

import json
import re
from html.parser import HTMLParser

import pytest

from documents.access import COMMAND_LINE
from documents.models import ApiKey, Page
from documents.services.keys import update_api_key
from mcp_endpoint.protocol.extensions import APP_MIME_TYPE, UI_EXTENSION
from mcp_endpoint.tests.conftest import LEGACY, McpClient, doc_id
from mcp_endpoint.viewer import viewer_html

pytestmark = pytest.mark.django_db

VIEWER = "ui://quire/page-viewer"
APPS = {"extensions": {UI_EXTENSION: {"mimeTypes": [APP_MIME_TYPE]}}}
LINES = [[0, 30, 0.1, 0.2, 0.8, 0.23], [31, 61, 0.1, 0.24, 0.6, 0.27]]
QUESTION = {"query": "How many days of paid holiday do employees get?"}


class AppsClient(McpClient):
    """A client that declares MCP Apps on every request (`capabilities` in
    `_meta`: the 2026-07-28 place, which the handshake era reads too)."""

    def __init__(self, *args, capabilities: dict | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.capabilities = APPS if capabilities is None else capabilities

    def message(self, method: str, params: dict | None = None) -> dict:
        params = dict(params or {})
        key = "io.modelcontextprotocol/clientCapabilities"
        params["_meta"] = {key: self.capabilities, **params.get("_meta", {})}
        return super().message(method, params)


@pytest.fixture
def holiday_lines(handbook):
    page = Page.objects.get(document_id=doc_id("Holiday policy"), number=1)
    page.lines = LINES
    page.save(update_fields=["lines"])
    return page


@pytest.fixture(params=["legacy", "modern"])
def era(request):
    return request.param


def _tools(client) -> dict:
    return {tool["name"]: tool for tool in client.result("tools/list")["tools"]}


def _without_links(value):
    """A result with its signed links (which carry the time they were made)
    blanked, so two calls can be compared byte for byte."""
    text = json.dumps(value, sort_keys=True)
    return re.sub(r"/citations/[^\"#\\]+", "/citations/TOKEN", text)


def test_clients_without_apps_get_todays_tools_and_results(
    era, handbook, handbook_key, holiday_lines
):
    """A client that did not declare the extension (or declared it without
    the mcp-app MIME type) gets the same tools/list, resources/list and
    get_pages/rag_search results, byte for byte, as one that sent no
    capabilities at all: no `_meta.ui`, no app-only tool, no ui:// resource."""
    plain = McpClient("handbook", handbook_key, era)
    other = AppsClient(
        "handbook",
        handbook_key,
        era,
        capabilities={"extensions": {UI_EXTENSION: {"mimeTypes": ["text/uri-list"]}}},
    )
    for client in (plain, other):
        listed = client.send("tools/list")
        assert b'"_meta"' not in listed.content.replace(b'"_meta": {"io', b"")
        assert b"show_page" not in listed.content
        assert b"ui://" not in client.send("resources/list").content
    assert _tools(plain) == _tools(other)
    pages = {"document_id": doc_id("Holiday policy"), "page_start": 1, "page_end": 2}
    first = plain.call_tool_expecting_success("get_pages", pages)
    assert "structuredContent" not in first
    assert first == other.call_tool_expecting_success("get_pages", pages)
    answers = [
        c.call_tool_expecting_success("rag_search", QUESTION) for c in (plain, other)
    ]
    assert _without_links(answers[0]) == _without_links(answers[1])
    with_apps = AppsClient("handbook", handbook_key, era)
    linked = with_apps.call_tool_expecting_success("rag_search", QUESTION)
    assert _without_links(linked) == _without_links(answers[0])


def test_clients_with_apps_see_the_viewer_linked(era, handbook, handbook_key):
    """Declaring the extension links get_pages and rag_search to the viewer
    (`_meta.ui.resourceUri`) and lists the app-only show_page with
    `visibility: ["app"]`; the other tools' definitions are unchanged."""
    plain = _tools(McpClient("handbook", handbook_key, era))
    tools = _tools(AppsClient("handbook", handbook_key, era))
    for name in ("get_pages", "rag_search"):
        assert tools[name]["_meta"]["ui"] == {"resourceUri": VIEWER}
        assert {k: v for k, v in tools[name].items() if k != "_meta"} == plain[name]
    assert tools["show_page"]["_meta"]["ui"] == {
        "resourceUri": VIEWER,
        "visibility": ["app"],
    }
    assert set(tools) - {"show_page"} == set(plain)
    for name in set(plain) - {"get_pages", "rag_search"}:
        assert tools[name] == plain[name]


def test_initialize_and_discover_answer_the_extension(handbook, handbook_key):
    """The server names the extension in its capabilities only to a client
    that declared it (initialize in the handshake era, server/discover in
    2026-07-28); otherwise its capabilities are today's."""
    legacy = McpClient("handbook", handbook_key, "legacy")
    base = {"protocolVersion": LEGACY, "clientInfo": {"name": "t", "version": "1"}}
    plain = legacy.result("initialize", {**base, "capabilities": {}})
    assert "extensions" not in plain["capabilities"]
    declared = legacy.result("initialize", {**base, "capabilities": APPS})
    assert declared["capabilities"]["extensions"] == {UI_EXTENSION: {}}
    assert {k: v for k, v in declared["capabilities"].items() if k != "extensions"} == (
        plain["capabilities"]
    )
    modern = AppsClient("handbook", handbook_key, "modern")
    assert modern.result("server/discover")["capabilities"]["extensions"] == {
        UI_EXTENSION: {}
    }
    discover = McpClient("handbook", handbook_key, "modern").result("server/discover")
    assert "extensions" not in discover["capabilities"]


def test_the_viewer_resource_is_an_mcp_app_with_a_strict_csp(
    era, handbook, handbook_key
):
    """resources/read of the ui:// URI gives the HTML as text/html;profile=
    mcp-app with `_meta.ui.csp` declaring no outside domain; resources/list
    names it to Apps clients."""
    client = AppsClient("handbook", handbook_key, era)
    listed = client.result("resources/list")["resources"]
    (viewer,) = [r for r in listed if r["uri"] == VIEWER]
    assert viewer["mimeType"] == APP_MIME_TYPE
    (content,) = client.result("resources/read", {"uri": VIEWER})["contents"]
    assert content["mimeType"] == APP_MIME_TYPE
    assert content["text"].startswith("<!DOCTYPE html>")
    assert content["_meta"]["ui"]["csp"] == {
        "connectDomains": [],
        "resourceDomains": [],
    }


def test_show_page_gives_the_image_with_the_quoted_lines(
    era, handbook, handbook_key, holiday_lines
):
    """The app-only tool returns the cited page as the citation page shows it:
    its image, one box per quoted line in thousandths of the page, the title,
    page count and revision, and a signed link to the original."""
    client = AppsClient("handbook", handbook_key, era)
    citation = client.call_tool_expecting_success("rag_search", QUESTION)[
        "structuredContent"
    ]["citations"][0]
    view = client.call_tool_expecting_success(
        "show_page",
        {
            "document_id": citation["document_id"],
            "page_number": citation["page_number"],
            "quote": citation["quote"],
        },
    )["structuredContent"]
    assert view["title"] == "Holiday policy" and view["page_number"] == 1
    assert view["page_count"] == 3 and view["revision"] == 1
    assert view["view"] == "image" and view["image"]["mimeType"] == "image/png"
    assert view["marks"] == [
        {"x": 100.0, "y": 200.0, "width": 700.0, "height": 30.0},
        {"x": 100.0, "y": 240.0, "width": 500.0, "height": 30.0},
    ]
    assert view["text"]["quoted"].startswith("Employees receive twenty five days")
    assert "/citations/" in view["original_url"]


def test_show_page_of_a_text_page_marks_the_quote_in_its_text(handbook, handbook_key):
    """A page without an image is shown as text, split around the quote; the
    next page of the document is reachable without a quote (navigation)."""
    client = AppsClient("handbook", handbook_key, "modern")
    holiday = doc_id("Holiday policy")
    view = client.call_tool_expecting_success(
        "show_page",
        {"document_id": holiday, "page_number": 2, "quote": "carried over"},
    )["structuredContent"]
    assert view["view"] == "text" and view["image"] is None
    assert view["text"] == {
        "before": "Unused holiday days may be ",
        "quoted": "carried over",
        "after": " until March.",
    }
    # The page as the citation page renders it: sanitised HTML, the quote marked.
    assert '<mark class="quire-mark">carried over</mark>' in view["html"]
    assert "<script" not in view["html"]
    third = client.call_tool_expecting_success(
        "show_page", {"document_id": holiday, "page_number": 3}
    )["structuredContent"]
    assert third["text"]["quoted"] == "" and third["marks"] == []
    assert "<mark" not in third["html"]


def test_get_pages_tells_apps_clients_which_pages_it_returned(handbook, handbook_key):
    """With Apps, get_pages also returns structuredContent naming the document
    and its pages, which the viewer starts from."""
    client = AppsClient("handbook", handbook_key, "legacy")
    holiday = doc_id("Holiday policy")
    result = client.call_tool_expecting_success(
        "get_pages", {"document_id": holiday, "page_start": 2, "page_end": 3}
    )
    assert result["structuredContent"] == {
        "document_id": holiday,
        "title": "Holiday policy",
        "revision": 1,
        "page_count": 3,
        "pages": [2, 3],
    }


def test_show_page_stays_inside_the_callers_channel(
    handbook, handbook_key, papers, papers_key
):
    """A document of another channel, a page outside the document, and a key
    that lost the channel are refused like any other call."""
    client = AppsClient("handbook", handbook_key, "modern")
    protein = doc_id("Protein folding")
    text = client.call_tool_expecting_error(
        "show_page", {"document_id": protein, "page_number": 1}
    )
    assert "not in this collection" in text
    text = client.call_tool_expecting_error(
        "show_page", {"document_id": doc_id("Holiday policy"), "page_number": 9}
    )
    assert "not in this collection" in text
    key = ApiKey.objects.get(name="handbook agent")
    update_api_key(
        api_key=key,
        actor=COMMAND_LINE,
        name=key.name,
        channels=[papers],
        scopes=key.scopes,
        expires_at=None,
    )
    response = client.send(
        "tools/call",
        {
            "name": "show_page",
            "arguments": {"document_id": doc_id("Holiday policy"), "page_number": 1},
        },
    )
    assert response.status_code in (403, 404)
    assert b"Holiday" not in response.content


class _Html(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data


def test_the_viewer_html_needs_nothing_beyond_the_default_csp():
    """The spec's default CSP allows inline script and style, `data:` images,
    and no connections: the viewer has only inline scripts (no src), no
    inline event handlers, no stylesheet or frame from elsewhere, no URL
    but the SVG namespace, no network API, no eval; its own meta CSP is at
    least as strict as the default."""
    parser = _Html()
    parser.feed(viewer_html())
    assert parser.scripts, "the viewer has its script inline"
    for tag, attrs in parser.tags:
        assert tag not in ("link", "iframe", "object", "embed", "base", "form"), tag
        if tag == "script":
            assert "src" not in attrs
        assert not [name for name in attrs if name.startswith("on")], (tag, attrs)
        for name in ("src", "href", "action", "data", "srcset", "poster"):
            assert name not in attrs or attrs[name].startswith("data:"), (tag, attrs)
    urls = set(re.findall(r"[a-z]+://[^\s\"')]+", viewer_html()))
    assert urls == {"http://www.w3.org/2000/svg"}
    script = "\n".join(parser.scripts)
    for api in (
        "fetch(",
        "XMLHttpRequest",
        "WebSocket",
        "EventSource",
        "sendBeacon",
        "importScripts",
        "import(",
        "eval(",
        "Function(",
        "innerHTML",
        "document.write",
        "window.open",
    ):
        assert api not in script, api
    (meta,) = [
        attrs["content"]
        for tag, attrs in parser.tags
        if tag == "meta" and attrs.get("http-equiv") == "Content-Security-Policy"
    ]
    policy = {
        part.split()[0]: part.split()[1:]
        for part in (p.strip() for p in meta.split(";"))
        if part
    }
    assert policy["default-src"] == ["'none'"]
    assert policy["connect-src"] == ["'none'"]
    assert policy["img-src"] == ["data:"]
    assert policy["script-src"] == ["'unsafe-inline'"]


def test_show_page_follows_the_get_pages_switch(handbook, handbook_key):
    """A channel that switches get_pages off serves no page to the viewer
    either: show_page is then neither listed nor callable."""
    handbook.tool_switches = {"get_pages": False}
    handbook.save()
    client = AppsClient("handbook", handbook_key, "modern")
    assert "show_page" not in _tools(client)
    status, error = client.error(
        "tools/call",
        {"name": "show_page", "arguments": {"document_id": 1, "page_number": 1}},
    )
    assert "Unknown tool" in error["message"]
