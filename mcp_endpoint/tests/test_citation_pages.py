"""Citations with regions over MCP, and the page a citation link opens."""

import re

import pytest
from asgiref.sync import async_to_sync
from django.core import signing

from documents.access import COMMAND_LINE, Caller
from documents.models import ApiKey, Page
from documents.services.keys import revoke_api_key
from documents.tests.corpus import mark_synced
from mcp_endpoint.citations import (
    citation_page_url,
    read_citation_token,
    sign_link,
)
from mcp_endpoint.tests.conftest import doc_id

pytestmark = pytest.mark.django_db

# Two line boxes for page 1 of "Holiday policy" ("Employees receive twenty five
# days of paid holiday each year."): its two halves.
LINES = [[0, 30, 0.1, 0.2, 0.8, 0.23], [31, 61, 0.1, 0.24, 0.6, 0.27]]


@pytest.fixture
def holiday_lines(handbook):
    page = Page.objects.get(document_id=doc_id("Holiday policy"), number=1)
    page.lines = LINES
    page.save(update_fields=["lines"])
    return page


def page_token(document, *, page: int, span=None) -> str:
    """The token of a page link made for the handbook's agent key."""
    url = citation_page_url(
        document,
        base_url="",
        page=page,
        span=span,
        caller=Caller(via="mcp", api_key=ApiKey.objects.get(name="handbook agent")),
    )
    return url.split("/")[2]


def path_of(url: str) -> str:
    return url.removeprefix("http://testserver").removesuffix("#quote")


def get(mcp, url: str):
    return async_to_sync(mcp.client.get)(path_of(url))


def test_rag_search_citations_carry_regions_and_a_page_link(mcp, holiday_lines):
    """Each structured citation has the quote's line boxes on its page and a
    signed link to the page view of that quote."""
    result = mcp.call_tool_expecting_success(
        "rag_search", {"query": "How many days of paid holiday do employees get?"}
    )
    citation = result["structuredContent"]["citations"][0]
    assert citation["document_id"] == doc_id("Holiday policy")
    assert "twenty five days" in citation["quote"]
    assert citation["regions"] == [
        {"x0": 0.1, "y0": 0.2, "x1": 0.8, "y1": 0.23},
        {"x0": 0.1, "y0": 0.24, "x1": 0.6, "y1": 0.27},
    ]
    assert re.fullmatch(
        r"http://testserver/citations/[^/]+/page#quote", citation["url"]
    )
    target = read_citation_token(path_of(citation["url"]).split("/")[2])
    assert (target.document_id, target.page) == (doc_id("Holiday policy"), 1)
    assert target.revision == 1  # the revision cited, for after a new file
    assert holiday_lines.text[target.start : target.end] == citation["quote"]


def test_retrieve_text_chunks_passages_carry_regions(mcp, holiday_lines):
    """A passage on a page with line positions has their boxes; others have
    an empty list."""
    chunks = mcp.call_tool_expecting_success(
        "retrieve_text_chunks", {"query": "paid holiday days"}
    )["structuredContent"]["chunks"]
    by_page = {(c["document_id"], c["page_number"]): c for c in chunks}
    holiday = by_page[(doc_id("Holiday policy"), 1)]
    assert len(holiday["regions"]) == 2
    others = [c for key, c in by_page.items() if key != (doc_id("Holiday policy"), 1)]
    assert others and all(c["regions"] == [] for c in others)


def test_the_page_view_shows_the_image_with_the_quoted_lines_marked(mcp, holiday_lines):
    """The link opens an HTML page: the page image, one highlight per quoted
    line (in thousandths of the page), the quote beside it, and a link to the
    original; the image is served under the same token."""
    result = mcp.call_tool_expecting_success(
        "rag_search", {"query": "How many days of paid holiday do employees get?"}
    )
    citation = result["structuredContent"]["citations"][0]
    response = get(mcp, citation["url"])
    assert response.status_code == 200
    assert response["X-Robots-Tag"] == "noindex"
    page = response.content.decode()
    marks = re.findall(r'<rect class="cited-mark"(?: id="quote")? ([^>]*)>', page)
    assert marks == [
        'x="100.0" y="200.0" width="700.0" height="30.0"',
        'x="100.0" y="240.0" width="500.0" height="30.0"',
    ]
    assert f'<blockquote class="cited-quote">{citation["quote"]}</blockquote>' in page
    assert '<mark class="quire-mark">Employees receive twenty five days' in page
    image = re.search(r'<img src="([^"]+)"', page).group(1)
    assert image.endswith("/image")
    picture = async_to_sync(mcp.client.get)(image)
    assert picture.status_code == 200 and picture["Content-Type"] == "image/png"
    original = re.search(r'class="[^"]*cited-original" href="([^"]+)"', page).group(1)
    opened = async_to_sync(mcp.client.get)(original)
    assert opened.status_code == 200
    assert b"".join(opened.streaming_content).startswith(b"Employees receive")


def test_a_page_without_lines_or_image_shows_its_text_with_the_quote(mcp):
    """Without line positions nothing is drawn on the page; without an image
    the page text is shown, the quote marked in it."""
    expenses = doc_id("Expense rules")
    token = page_token(
        Page.objects.get(document_id=expenses).document, page=1, span=(0, 15)
    )
    response = async_to_sync(mcp.client.get)(f"/citations/{token}/page")
    page = response.content.decode()
    assert response.status_code == 200
    assert 'class="cited-mark"' not in page and "<img" not in page
    assert '<mark class="quire-mark" id="quote">Travel expenses</mark>' in page
    image = async_to_sync(mcp.client.get)(f"/citations/{token}/image")
    assert image.status_code == 404


def test_page_links_are_signed_and_expire(mcp, settings, holiday_lines):
    """A forged, altered or stale page link is refused; a link to a page the
    document doesn't have is gone; the page view never serves another
    channel's document; revoking the key ends its page links."""
    document = holiday_lines.document
    key = ApiKey.objects.get(name="handbook agent")
    good = page_token(document, page=1, span=(0, 10))
    forged = signing.dumps(
        {"d": document.pk, "c": document.channel_id, "p": 1, "a": f"key:{key.pk}"}
    )
    altered = good[:-2] + "xx"
    for token in (forged, altered, "..%5C..%5Cetc%5Cpasswd"):
        for view in ("page", "image"):
            response = async_to_sync(mcp.client.get)(f"/citations/{token}/{view}")
            assert response.status_code == 403, (token, view)
    missing_page = page_token(document, page=99)
    response = async_to_sync(mcp.client.get)(f"/citations/{missing_page}/page")
    assert response.status_code == 410
    # The key does not open another channel: the link names one it can't read.
    other_channel = sign_link(
        {"d": document.pk, "c": document.channel_id + 1, "p": 1},
        caller=Caller(via="mcp", api_key=key),
    )
    response = async_to_sync(mcp.client.get)(f"/citations/{other_channel}/page")
    assert response.status_code == 403
    assert async_to_sync(mcp.client.get)(f"/citations/{good}/page").status_code == 200
    revoke_api_key(api_key=key, actor=COMMAND_LINE)
    for view in ("page", "image"):
        response = async_to_sync(mcp.client.get)(f"/citations/{good}/{view}")
        assert response.status_code == 403
        assert b"no longer has access" in response.content
    settings.CITATION_URL_MAX_AGE = -1
    response = async_to_sync(mcp.client.get)(f"/citations/{good}/page")
    assert response.status_code == 410
    assert b"expired" in response.content


def test_a_stale_span_shows_the_page_unmarked(mcp, holiday_lines):
    """A span past the page's text (the page was re-ingested shorter) marks
    nothing rather than failing."""
    token = page_token(holiday_lines.document, page=1, span=(500, 900))
    response = async_to_sync(mcp.client.get)(f"/citations/{token}/page")
    assert response.status_code == 200
    assert 'class="cited-mark"' not in response.content.decode()


def source_line(page: str) -> str | None:
    found = re.search(r'<p class="cited-source">(.*?)</p>', page, re.S)
    return found.group(1) if found else None


def open_page(mcp, document) -> str:
    token = page_token(document, page=1)
    response = async_to_sync(mcp.client.get)(f"/citations/{token}/page")
    assert response.status_code == 200
    return response.content.decode()


def test_the_page_of_a_synced_web_page_links_to_its_source(mcp, holiday_lines):
    """A synced web page's citation page says "Source:" with a link to its
    public URL (no opener, no referrer) and the source's name; an upload's
    page has no source line."""
    url = "https://handbook.example/holidays?lang=en&v=2"
    document = mark_synced(holiday_lines.document, key=url, url=url)
    line = source_line(open_page(mcp, document))
    assert line == (
        'Source: <a href="https://handbook.example/holidays?lang=en&amp;v=2" '
        'rel="noopener noreferrer">https://handbook.example/holidays?lang=en&amp;v=2'
        "</a> (Handbook site)"
    )
    upload = Page.objects.get(document_id=doc_id("Expense rules")).document
    page = open_page(mcp, upload)
    assert source_line(page) is None and "Source:" not in page


@pytest.mark.parametrize(
    "stored",
    [
        "javascript:alert(document.cookie)",
        "JavaScript:alert(1)",
        " javascript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "file:///etc/passwd",
    ],
)
def test_the_page_never_links_to_a_script_or_local_url(mcp, holiday_lines, stored):
    """A stored source URL that is not http(s) never becomes a link, nor
    appears on the page."""
    document = mark_synced(holiday_lines.document, key="k", url=stored)
    page = open_page(mcp, document)
    assert source_line(page) is None
    assert "javascript" not in page.lower() and "file:" not in page


def test_the_source_link_is_escaped(mcp, holiday_lines):
    """A URL carrying quotes and markup is escaped in the link and its text:
    it never closes the attribute or opens an element."""
    url = 'https://handbook.example/a"onmouseover="alert(1)"><script>x</script>'
    document = mark_synced(holiday_lines.document, key="k", url=url)
    line = source_line(open_page(mcp, document))
    assert line is not None
    assert "<script>" not in line and '"onmouseover' not in line
    assert "&quot;onmouseover=&quot;alert(1)&quot;&gt;&lt;script&gt;" in line
    assert re.fullmatch(r'Source: <a href="[^"<>]+" rel="noopener noreferrer">.*', line)


def test_the_page_header_leads_back_only_within_the_site(mcp, holiday_lines):
    """The header names the document, page and revision and links the
    original; its back link is the Referer only when that is a page of this
    site (a playground answer, say); from anywhere else it is the browser's
    own back, which carries no address."""
    token = page_token(holiday_lines.document, page=1, span=(0, 10))
    url = f"/citations/{token}/page"
    same_site = "http://testserver/playground/?tool=rag_search"
    page = async_to_sync(mcp.client.get)(url, headers={"referer": same_site})
    text = page.content.decode()
    assert f'<a class="pv-button" href="{same_site}">&larr; Back</a>' in text
    assert '<h1 class="pv-title">Holiday policy</h1>' in text
    assert "Revision 1" in text
    for referer in ("https://evil.example/x", "javascript:alert(1)", ""):
        headers = {"referer": referer} if referer else {}
        text = async_to_sync(mcp.client.get)(url, headers=headers).content.decode()
        assert "evil.example" not in text and "javascript:" not in text
        assert (
            '<button class="pv-button" type="button" data-pageview-back hidden>' in text
        )


def test_a_word_page_is_shown_as_the_document_with_the_quote_in_place(mcp):
    """A page without an image (a Word document's) is rendered as its
    structure, full width, the quote marked where it sits; no placeholder."""
    document = Page.objects.get(document_id=doc_id("Expense rules")).document
    document.content_type = (
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    )
    document.save(update_fields=["content_type"])
    page = Page.objects.get(document=document, number=1)
    page.text = "# Expenses\n\n" + page.text
    page.save(update_fields=["text"])
    start = page.text.index("Travel expenses")
    token = page_token(document, page=1, span=(start, start + 15))
    text = async_to_sync(mcp.client.get)(f"/citations/{token}/page").content.decode()
    assert '<article class="pv-document quire-document"' in text
    assert "<h1>Expenses</h1>" in text
    assert '<p><mark class="quire-mark" id="quote">Travel expenses</mark>' in text
    assert "No image" not in text
