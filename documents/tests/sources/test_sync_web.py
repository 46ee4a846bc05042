"""Syncing a website into a channel, against a real HTTP server on 127.0.0.1:
a small site with a sitemap, a robots.txt that disallows a path, a redirect
and pages that change between syncs. Documents of pages carry their URL
(source_url) and the metadata their <meta> tags give."""

from __future__ import annotations

import pytest

from documents.models import Document, DocumentRevision, SourceSync
from documents.tests.sources.servers import Site
from documents.tests.syncing import add_source, audited, by_key, counts, sync

pytestmark = pytest.mark.django_db

Status = SourceSync.Status
FIELDS = [
    {"name": "product", "type": "string"},
    {"name": "year", "type": "number"},
]


@pytest.fixture
def web_settings(settings):
    settings.SOURCE_WEB_HOSTS = ["127.0.0.1"]
    settings.SOURCE_WEB_PUBLIC_ONLY = False
    settings.SOURCE_WEB_DELAY = 0.0


def guide(year: int, words: str) -> str:
    return (
        "<html><head><title>Pump guide</title>"
        '<meta name="x-product" content="Pump P-1">'
        f'<meta name="year" content="{year}"></head>'
        f"<body><h1>Pump guide</h1><p>{words}</p></body></html>"
    )


def home(*links: str) -> str:
    anchors = " ".join(f'<a href="{link}">{link}</a>' for link in links)
    return (
        "<html><head><title>Home</title></head>"
        "<body><h1>Manuals</h1><p>Every manual of the plant.</p>"
        f"{anchors}</body></html>"
    )


def a_site(site: Site, host: str) -> None:
    site.pages["/robots.txt"] = (
        200,
        {"Content-Type": "text/plain"},
        f"User-agent: *\nDisallow: /private/\nSitemap: http://{host}/sitemap.xml\n".encode(),
    )
    site.page("/", home("/guide", "/old", "/faq", "/private/secret"))
    site.page("/guide", guide(2024, "Prime the pump before starting it."), ETag='"g1"')
    site.redirect("/old", "/new")
    site.page("/new", "<html><body><p>The new home of the old page.</p></body></html>")
    site.page("/faq", "<html><body><p>Questions asked often.</p></body></html>")
    site.page("/private/secret", "<html><body><p>Secret plans.</p></body></html>")
    urls = "".join(
        f"<url><loc>http://{host}{path}</loc></url>"
        for path in ("/guide", "/faq", "/private/secret")
    )
    site.pages["/sitemap.xml"] = (
        200,
        {"Content-Type": "application/xml"},
        (
            '<?xml version="1.0"?>'
            f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'
        ).encode(),
    )


def test_a_crawled_site_syncs_adds_revises_and_removes_pages(
    make_channel, site, web_settings
):
    """The crawl from the start page adds the pages robots.txt allows (a
    redirected link under its final URL), each with its URL and its mapped
    <meta> values; then a changed page becomes a revision with its new
    metadata, a page that is gone is removed and a new link is added."""
    state, host = site
    a_site(state, host)
    channel = make_channel(fields=FIELDS)
    source = add_source(
        channel,
        "web",
        {"url": f"http://{host}/"},
        metadata_map={"product": "x-product"},
        delete_removed=True,
    )

    first = sync(source)
    assert first.status == Status.DONE, first.reason
    assert counts(first) == (4, 0, 0, 0, 0), first.errors
    url = f"http://{host}"
    documents = by_key(source)
    assert set(documents) == {f"{url}/", f"{url}/guide", f"{url}/new", f"{url}/faq"}
    page = documents[f"{url}/guide"]
    assert page.source_url == f"{url}/guide"
    assert page.metadata == {"product": "Pump P-1", "year": 2024}
    assert documents[f"{url}/new"].source_url == f"{url}/new"
    assert not state.paths("/private/")

    again = sync(source)
    assert counts(again) == (0, 0, 4, 0, 0)

    state.page(
        "/guide", guide(2025, "Prime the pump, then open the valve."), ETag='"g2"'
    )
    state.page("/", home("/guide", "/old", "/faq", "/added"))
    del state.pages["/faq"]
    state.page("/added", "<html><body><p>A page added later.</p></body></html>")

    third = sync(source)
    assert third.status == Status.DONE, third.reason
    # /added added; / (its links) and /guide revised; /new unchanged; /faq removed.
    assert counts(third) == (1, 2, 1, 1, 0), third.errors
    after = by_key(source)
    assert set(after) == {f"{url}/", f"{url}/guide", f"{url}/new", f"{url}/added"}
    revised = Document.objects.get(pk=page.pk)
    assert after[f"{url}/guide"].pk == page.pk
    assert revised.metadata == {"product": "Pump P-1", "year": 2025}
    assert revised.source_version == 'etag:"g2"'
    revisions = DocumentRevision.objects.filter(document=page).order_by("number")
    assert [r.number for r in revisions] == [1, 2]
    assert audited("document.revise", page) == 1
    assert audited("document.edit", page) == 1
    assert audited("document.delete") == 1
    assert audited("source.sync") == 3
    assert not Document.objects.filter(pk=documents[f"{url}/faq"].pk).exists()


def test_a_sitemap_syncs_its_allowed_pages_and_keeps_removed_ones(
    make_channel, site, web_settings
):
    """From a sitemap only its pages sync, never one robots.txt disallows;
    a page dropped from the sitemap is kept when the source does not delete
    removed entries."""
    state, host = site
    a_site(state, host)
    channel = make_channel(fields=FIELDS)
    source = add_source(channel, "web", {"url": f"http://{host}/sitemap.xml"})
    first = sync(source)
    assert counts(first) == (2, 0, 0, 0, 0), first.errors
    url = f"http://{host}"
    assert set(by_key(source)) == {f"{url}/guide", f"{url}/faq"}
    assert by_key(source)[f"{url}/guide"].metadata == {"year": 2024}
    assert not state.paths("/private/")

    del state.pages["/faq"]
    second = sync(source)
    assert (second.status, second.unchanged, second.removed, second.kept) == (
        Status.DONE,
        1,
        0,
        1,
    )
    assert set(by_key(source)) == {f"{url}/guide", f"{url}/faq"}
