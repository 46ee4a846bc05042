"""Citation pages in Chromium at 1280 and 1440 px: a Word, an EPUB and an HTML
page rendered as the document (the quote marked in place and scrolled into the
first screen), a PDF page zoomable with its quote kept in view; each saved as
a screenshot in test-artifacts/pageview/, none scrolling sideways, failing a
request or breaking the CSP."""

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests_browser.conftest import ARTIFACTS
from tests_browser.test_admin_browser import OVERFLOW

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

DATA = Path(__file__).resolve().parent / "data"
SCREENSHOTS = ARTIFACTS / "pageview"
WIDTHS = [1280, 1440]
PDF = "faa-amt-handbook-self-locking-nuts.pdf"
FILES = {
    "docx": "markitdown__test.docx",
    "epub": "pandoc__wasteland.epub",
    "html": "markitdown__test_blog.html",
}


@dataclass
class Cited:
    url: str  # the citation page, path only
    quote: str


def _quote_near_the_end(page) -> tuple[int, int]:
    """A sentence-long span in the last third of the page's text: below the
    first screen when the page is shown from its top."""
    text = page.text
    start = text.index(" ", len(text) * 2 // 3) + 1
    end = text.find(" ", start + 60)
    end = len(text) if end < 0 else end
    while not text[end - 1].isalnum():
        end -= 1
    return start, end


def _quote_of_lines(page) -> tuple[int, int]:
    """Two lines in the middle of a PDF page (their boxes are known)."""
    middle = len(page.lines) // 2
    return page.lines[middle][0], page.lines[middle + 1][1]


@pytest.fixture(scope="module")
def cited(site, django_db_blocker, tmp_path_factory) -> dict[str, Cited]:
    """Citation links, made for a key of the site's channel, to the longest
    page of a Word document, an EPUB and an HTML file ingested for real, and to
    two lines of the PDF; the documents and key are removed afterwards."""
    from django.core.files import File
    from django.db.models.functions import Length
    from django.test import override_settings

    from documents.access import COMMAND_LINE, Caller
    from documents.models import Channel, Document, Page
    from documents.services.documents import create_document
    from documents.services.ingestion import ingest_document
    from documents.services.keys import create_api_key
    from mcp_endpoint.tests import live

    media = tmp_path_factory.mktemp("pageview-media")
    links: dict[str, Cited] = {}
    with (
        django_db_blocker.unblock(),
        override_settings(MEDIA_ROOT=media, STORAGES=live.media_storages(media)),
    ):
        channel = Channel.objects.get(slug=site.slug)
        key = create_api_key(
            actor=COMMAND_LINE, name="Page view (browser test)", channels=[channel]
        )
        caller = Caller(via="mcp", api_key=key.api_key)
        created = []
        for kind, name in FILES.items():
            with open(DATA / name, "rb") as handle:
                document = create_document(
                    actor=COMMAND_LINE,
                    channel=channel,
                    file=File(handle, name=name),
                    enqueue=False,
                )
            document = ingest_document(document_id=document.pk)
            assert document.status == Document.Status.READY, document.status_reason
            created.append(document.pk)
            page = (
                Page.objects.filter(document=document)
                .order_by(Length("text").desc())
                .first()
            )
            links[kind] = _link(document, page, _quote_near_the_end(page), caller)
        pdf = Document.objects.get(pk=site.document_ids[PDF])
        page = Page.objects.filter(document=pdf).exclude(lines=[]).first()
        links["pdf"] = _link(pdf, page, _quote_of_lines(page), caller)
    yield links
    with django_db_blocker.unblock():
        Document.objects.filter(pk__in=created).delete()
        key.api_key.delete()


def _link(document, page, span, caller) -> Cited:
    from mcp_endpoint.citations import citation_page_url

    url = citation_page_url(
        document, base_url="", page=page.number, span=span, caller=caller
    )
    return Cited(url, " ".join(page.text[span[0] : span[1]].split()))


def _watched(browser, site, width: int, height: int = 800):
    """A page at this window size, and the failed requests and console errors
    it meets."""
    context = browser.new_context(
        base_url=site.base_url, viewport={"width": width, "height": height}
    )
    page = context.new_page()
    page.set_default_timeout(15_000)
    problems: list[str] = []
    page.on(
        "response",
        lambda r: problems.append(f"{r.status} {r.url}") if r.status >= 400 else None,
    )
    page.on(
        "console",
        lambda m: problems.append(m.text) if m.type == "error" else None,
    )
    return context, page, problems


def _marks_text(page) -> str:
    return " ".join(
        page.evaluate(
            "() => [...document.querySelectorAll('.pv-document mark')]"
            ".map((m) => m.textContent).join(' ')"
        ).split()
    )


def test_a_word_citation_shows_the_quote_in_the_first_screen(browser, site, cited):
    """At 1280x800 a DOCX citation page shows the document full width and the
    quoted passage marked in place, inside the first screen below the header,
    with no placeholder for a page image."""
    context, page, problems = _watched(browser, site, 1280)
    try:
        page.goto(cited["docx"].url + "#quote")
        page.wait_for_load_state("load")
        page.wait_for_function(
            "() => document.getElementById('quote').getBoundingClientRect().top"
            " < innerHeight"
        )
        mark = page.locator("#quote")
        assert mark.evaluate("(m) => m.tagName") == "MARK"
        box = mark.bounding_box()
        header = page.locator(".pv-header").bounding_box()
        assert box["y"] >= header["y"] + header["height"]
        assert box["y"] + box["height"] <= 800
        assert cited["docx"].quote.startswith(_marks_text(page)[:40])
        article = page.locator(".pv-document").bounding_box()
        assert article["width"] > 1280 * 0.6
        assert page.get_by_text("No image of this page").count() == 0
        assert page.locator(".pv-header h1").inner_text()
        assert page.get_by_role("link", name="Open the original").is_visible()
    finally:
        context.close()
    assert problems == []


def test_the_pdf_page_zooms_with_the_quote_kept_in_view(browser, site, cited):
    """The buttons and Ctrl + wheel zoom the page image; the quoted lines stay
    inside the visible part of the page; Fit goes back to the window's width."""
    context, page, problems = _watched(browser, site, 1280)
    try:
        page.goto(cited["pdf"].url + "#quote")
        page.wait_for_load_state("load")
        scroll = page.locator("[data-zoom-scroll]")
        sheet = page.locator("[data-zoom-sheet]")
        fit_width = sheet.bounding_box()["width"]

        def quote_in_view() -> bool:
            view, mark = scroll.bounding_box(), page.locator("#quote").bounding_box()
            centre_x = mark["x"] + mark["width"] / 2
            centre_y = mark["y"] + mark["height"] / 2
            return (
                view["x"] <= centre_x <= view["x"] + view["width"]
                and view["y"] <= centre_y <= view["y"] + view["height"]
            )

        assert quote_in_view()
        for _ in range(3):
            page.get_by_role("button", name="Zoom in").click()
        assert page.locator("[data-zoom-level]").inner_text() == "195%"
        assert sheet.bounding_box()["width"] > fit_width * 1.9
        assert quote_in_view()
        box = scroll.bounding_box()
        page.mouse.move(box["x"] + 50, box["y"] + 50)
        page.keyboard.down("Control")
        page.mouse.wheel(0, -300)
        page.keyboard.up("Control")
        page.wait_for_function(
            "() => document.querySelector('[data-zoom-level]').textContent !== '195%'"
        )
        assert sheet.bounding_box()["width"] > fit_width * 2.5
        assert quote_in_view()
        page.get_by_role("button", name="Fit").click()
        assert page.locator("[data-zoom-level]").inner_text() == "100%"
        assert abs(sheet.bounding_box()["width"] - fit_width) < 2
    finally:
        context.close()
    assert problems == []


@pytest.mark.parametrize("width", WIDTHS)
def test_every_citation_page_fits_the_window(browser, site, cited, width):
    """At 1280 and 1440 px the citation page of each format scrolls nothing
    sideways, loads every request, breaks no CSP rule, shows its quote marked
    in the first screen; each is saved as a screenshot."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    context, page, problems = _watched(browser, site, width, 900)
    overflowing, unseen = {}, []
    try:
        for kind, link in cited.items():
            page.goto(link.url + "#quote")
            page.wait_for_load_state("load")
            page.wait_for_timeout(200)
            fit = page.evaluate(OVERFLOW)
            if fit["page"] > fit["window"] or fit["boxes"]:
                overflowing[kind] = fit
            top = page.locator("#quote").evaluate(
                "(m) => m.getBoundingClientRect().top"
            )
            if not 0 <= top < 900:
                unseen.append(kind)
            page.screenshot(path=SCREENSHOTS / f"citation-{kind}-{width}.png")
    finally:
        context.close()
    assert overflowing == {}
    assert unseen == []
    assert problems == []
