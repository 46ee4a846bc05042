"""The web source against a real HTTP server on 127.0.0.1: a small site with a
sitemap, a robots.txt that disallows a path, redirects and a page that changes
between listings; and hostile sites (private redirects, an endless calendar,
an endless file, sitemap bombs, a server that goes away)."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from http.server import ThreadingHTTPServer

import pytest

from documents.sources.base import (
    BudgetExceeded,
    Entry,
    EntryTooLarge,
    Skipped,
    SourceConfigError,
    SourceError,
)
from documents.sources.registry import build_source
from documents.sources.web.source import WebSource
from documents.tests.sources.servers import Site, handler_for


class Clock:
    """Time that passes only when the source sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def web(settings):
    """A builder of web sources with the test's clock and, optionally, a
    resolver naming hosts that are really 127.0.0.1."""
    settings.SOURCE_WEB_DELAY = 0.5
    settings.SOURCE_WEB_HOSTS = []
    settings.SOURCE_WEB_PUBLIC_ONLY = False
    clock = Clock()

    def build(
        config: dict, *, names: dict[str, str] | None = None, max_bytes: int = 10**6
    ) -> WebSource:
        resolver = None
        if names is not None:

            def resolver(host: str, port: int) -> list[str]:
                return [names.get(host, host)]

        return WebSource.from_config(
            config,
            max_bytes=max_bytes,
            clock=clock,
            sleep=clock.sleep,
            resolver=resolver,
        )

    build.clock = clock
    return build


def entries(items) -> dict[str, Entry]:
    found = {}
    for item in items:
        assert isinstance(item, Entry), item
        found[item.key] = item
    return found


def small_site(site: Site, host: str) -> None:
    site.pages["/robots.txt"] = (
        200,
        {"Content-Type": "text/plain"},
        f"User-agent: *\nDisallow: /private/\nSitemap: http://{host}/sitemap.xml\n".encode(),
    )
    site.page(
        "/",
        '<html><head><title>Home</title><meta name="author" content="Ada"></head>'
        '<body><a href="/guide">Guide</a> <a href="/private/secret">s</a>'
        ' <a href="/old">old</a> <a href="https://elsewhere.example/x">x</a>'
        ' <a href="/go-private">p</a>'
        "</body></html>",
    )
    site.page(
        "/guide",
        '<html><head><meta property="og:type" content="manual">'
        '<meta name="revision" content="2"></head><body>Guide v2</body></html>',
        ETag='"g2"',
    )
    site.redirect("/old", "/new")
    site.redirect("/go-private", "/private/secret")
    site.page("/new", "<html><body>New home of old</body></html>")
    site.page("/private/secret", "<html><body>secret</body></html>")
    site.pages["/sitemap.xml"] = (
        200,
        {"Content-Type": "application/xml"},
        (
            '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"<url><loc>http://{host}/</loc></url>"
            f"<url><loc>http://{host}/guide</loc></url>"
            f"<url><loc>http://{host}/private/secret</loc></url>"
            "</urlset>"
        ).encode(),
    )


def test_a_crawl_follows_same_site_links_obeys_robots_and_sees_changes(
    site, web, settings
):
    """The crawl lists the start page and the pages it links to on the same
    site, under their redirected URLs, never a path robots.txt disallows nor
    another site; a page that changes gets a new version and its new
    metadata, a removed page drops out, a renamed one appears under its new
    URL."""
    state, host = site
    settings.SOURCE_WEB_HOSTS = ["127.0.0.1"]
    small_site(state, host)
    source = web({"url": f"http://{host}/"})
    with source:
        first = entries(source.list())
        assert set(first) == {
            f"http://{host}/",
            f"http://{host}/guide",
            f"http://{host}/new",
        }
        guide = first[f"http://{host}/guide"]
        assert guide.version == 'etag:"g2"'
        assert guide.metadata == {"og:type": "manual", "revision": "2"}
        assert guide.source_url == f"http://{host}/guide"
        assert first[f"http://{host}/"].metadata == {"title": "Home", "author": "Ada"}
        assert source.open(guide).read() == state.pages["/guide"][2]
    assert not any(path.startswith("/private/") for path, _ in state.requests)
    requests_before = len(state.requests)
    assert source.open(guide).read() == state.pages["/guide"][2]
    assert len(state.requests) == requests_before + 1
    requests_before += 1

    state.page("/guide", '<meta name="revision" content="3">Guide v3', ETag='"g3"')
    del state.pages["/new"]
    state.redirect("/old", "/newer")
    state.page("/newer", "<html><body>Moved again</body></html>")
    with source:
        second = entries(source.list())
    assert set(second) == {
        f"http://{host}/",
        f"http://{host}/guide",
        f"http://{host}/newer",
    }
    assert second[f"http://{host}/guide"].version == 'etag:"g3"'
    assert second[f"http://{host}/guide"].metadata == {"revision": "3"}
    assert second[f"http://{host}/"].version == first[f"http://{host}/"].version
    assert len(state.requests) > requests_before


def test_requests_are_paced_by_the_delay_and_robots_crawl_delay(site, web, settings):
    """Between two requests the source waits the configured delay, or the
    site's Crawl-delay when that is longer; time is the test's clock."""
    state, host = site
    settings.SOURCE_WEB_HOSTS = ["127.0.0.1"]
    small_site(state, host)
    source = web({"url": f"http://{host}/"})
    list(source.list())
    requests = len(state.requests)
    assert requests >= 4
    assert web.clock.now >= 0.5 * (requests - 1)
    state.pages["/robots.txt"] = (200, {}, b"User-agent: *\nCrawl-delay: 3\n")
    web.clock.sleeps.clear()
    list(source.list())
    assert web.clock.sleeps and min(web.clock.sleeps[1:]) >= 2.99


def test_a_sitemap_lists_its_pages_and_asks_only_whether_they_changed(
    site, web, settings
):
    """From a sitemap the source lists its pages (robots.txt still applies);
    a second listing with the versions known sends If-None-Match and takes a
    304 as unchanged without a body."""
    state, host = site
    settings.SOURCE_WEB_HOSTS = ["127.0.0.1"]
    small_site(state, host)
    source = web({"url": f"http://{host}/sitemap.xml"})
    first = entries(source.list())
    assert set(first) == {f"http://{host}/", f"http://{host}/guide"}

    def not_modified(path: str, etag: str) -> None:
        state.pages[path] = (304, {"ETag": etag}, b"")

    not_modified("/guide", '"g2"')
    second = entries(source.list({k: e.version for k, e in first.items()}))
    assert second[f"http://{host}/guide"].version == 'etag:"g2"'
    assert set(second) == set(first)
    assert state.if_none_match == ['"g2"']


def test_nested_and_gzipped_sitemaps_are_read(site, web, settings):
    """A sitemap index pointing at a gzipped sitemap lists that sitemap's pages."""
    state, host = site
    settings.SOURCE_WEB_HOSTS = ["127.0.0.1"]
    small_site(state, host)
    state.pages["/index.xml"] = (
        200,
        {"Content-Type": "application/xml"},
        (
            '<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"<sitemap><loc>http://{host}/pages.xml.gz</loc></sitemap></sitemapindex>"
        ).encode(),
    )
    state.pages["/pages.xml.gz"] = (
        200,
        {"Content-Type": "application/gzip"},
        gzip.compress(
            (
                '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                f"<url><loc>http://{host}/guide</loc></url></urlset>"
            ).encode()
        ),
    )
    assert set(entries(web({"url": f"http://{host}/index.xml"}).list())) == {
        f"http://{host}/guide"
    }


def test_an_address_the_operator_did_not_allow_is_refused_before_any_request(
    site, web, settings
):
    """With no host allowed and public-only mode on, a site on 127.0.0.1 is
    refused with the reason, and the server never hears from the source."""
    state, host = site
    settings.SOURCE_WEB_PUBLIC_ONLY = True
    with pytest.raises(SourceError, match="127.0.0.1 is a loopback address"):
        list(web({"url": f"http://{host}/"}).list())
    assert state.requests == []
    settings.SOURCE_WEB_PUBLIC_ONLY = False
    with pytest.raises(SourceConfigError, match="SOURCE_WEB_HOSTS"):
        web({"url": f"http://{host}/"})


def test_links_and_redirects_to_private_addresses_are_refused_in_public_only_mode(
    site, web, settings
):
    """An allowed site whose page links to 127.0.0.1 does not make the source
    call it (another host); a page redirecting to a private, loopback or
    metadata address fails with the reason, and nothing connects there."""
    state, port = site[0], site[1].split(":")[1]
    settings.SOURCE_WEB_HOSTS = ["docs.example"]
    settings.SOURCE_WEB_PUBLIC_ONLY = True
    names = {"docs.example": "127.0.0.1", "intranet.example": "10.1.2.3"}
    base = f"http://docs.example:{port}"
    state.pages["/robots.txt"] = (404, {}, b"")
    state.page(
        "/",
        f'<a href="http://127.0.0.1:{port}/admin">a</a> <a href="/to-loopback">b</a>'
        ' <a href="/to-intranet">c</a> <a href="/to-metadata">d</a>',
    )
    state.redirect("/to-loopback", f"http://127.0.0.1:{port}/admin")
    state.redirect("/to-intranet", "http://intranet.example/")
    state.redirect("/to-metadata", "http://169.254.169.254/latest/meta-data/")
    items = list(web({"url": base + "/"}, names=names).list())
    skipped = {i.key: i.reason for i in items if isinstance(i, Skipped)}
    assert "127.0.0.1 is a loopback address" in skipped[base + "/to-loopback"]
    assert "SOURCE_WEB_PUBLIC_ONLY" in skipped[base + "/to-loopback"]
    assert "10.1.2.3, a private address" in skipped[base + "/to-intranet"]
    assert "cloud metadata address" in skipped[base + "/to-metadata"]
    assert {host for _, host in state.requests} == {f"docs.example:{port}"}


def test_a_redirect_loop_fails_its_page(site, web, settings):
    """A page redirecting in a circle fails with the reason after
    SOURCE_WEB_MAX_REDIRECTS hops; the rest of the site is listed."""
    state, host = site
    settings.SOURCE_WEB_HOSTS = ["127.0.0.1"]
    settings.SOURCE_WEB_MAX_REDIRECTS = 3
    state.page("/", '<a href="/loop-a">a</a> <a href="/fine">f</a>')
    state.redirect("/loop-a", "/loop-b")
    state.redirect("/loop-b", "/loop-a")
    state.page("/fine", "fine")
    items = list(web({"url": f"http://{host}/"}).list())
    assert (
        Skipped(
            f"http://{host}/loop-a",
            f"http://{host}/loop-a redirects more than 3 times.",
        )
        in items
    )
    assert sum(isinstance(i, Entry) for i in items) == 2
    assert len([p for p, _ in state.requests if p.startswith("/loop")]) == 4


def test_an_endless_calendar_ends_at_the_page_budget(site, web, settings):
    """A page linking to the next day forever is crawled up to the page
    budget, and the listing says it stopped there (never "everything")."""
    state, host = site
    settings.SOURCE_WEB_HOSTS = ["127.0.0.1"]
    state.page("/", '<a href="/calendar/1">calendar</a>')
    listed = []
    with pytest.raises(BudgetExceeded, match="budget of 25 pages"):
        for item in web({"url": f"http://{host}/", "max_pages": 25}).list():
            listed.append(item)
    assert len(listed) == 25
    assert len([p for p, _ in state.requests if p.startswith("/calendar/")]) == 24


def test_a_huge_file_is_refused_from_its_length_or_cut_off(site, web, settings):
    """A 2 GB file is refused from its Content-Length without reading it; an
    endless one without a length is cut after max_bytes, having been sent
    only a little more than that."""
    state, host = site
    settings.SOURCE_WEB_HOSTS = ["127.0.0.1"]
    state.page("/", '<a href="/big.bin">big</a> <a href="/endless.bin">endless</a>')
    state.pages["/big.bin"] = (
        200,
        {
            "Content-Type": "application/octet-stream",
            "Content-Length": str(2 * 1024**3),
        },
        lambda: iter(()),
    )

    def endless() -> Iterator[bytes]:
        while True:
            yield b"x" * 65536

    state.pages["/endless.bin"] = (200, {"Content-Type": "application/pdf"}, endless)
    items = list(web({"url": f"http://{host}/"}, max_bytes=1024 * 1024).list())
    skipped = {
        i.key.rsplit("/", 1)[-1]: i.reason for i in items if isinstance(i, Skipped)
    }
    assert "announces 2,147,483,648 bytes" in skipped["big.bin"]
    assert "larger than the 1,048,576 bytes" in skipped["endless.bin"]
    assert state.sent < 64 * 1024 * 1024


def test_sitemap_bombs_are_bounded(site, web, settings):
    """A sitemap nesting sitemaps without end stops at SOURCE_WEB_MAX_SITEMAPS;
    a sitemap over SOURCE_WEB_SITEMAP_MAX_BYTES, or one that gzip-inflates
    past it, is refused; a sitemap of more pages than the budget lists the
    budget and says so."""
    state, host = site
    settings.SOURCE_WEB_HOSTS = ["127.0.0.1"]
    settings.SOURCE_WEB_MAX_SITEMAPS = 5
    settings.SOURCE_WEB_SITEMAP_MAX_BYTES = 100_000
    state.pages["/robots.txt"] = (404, {}, b"")
    ns = "http://www.sitemaps.org/schemas/sitemap/0.9"
    for n in range(50):
        state.pages[f"/nest{n}.xml"] = (
            200,
            {"Content-Type": "application/xml"},
            f'<?xml version="1.0"?><sitemapindex xmlns="{ns}"><sitemap><loc>'
            f"http://{host}/nest{n + 1}.xml</loc></sitemap></sitemapindex>".encode(),
        )
    with pytest.raises(BudgetExceeded, match="more than 5 sitemaps"):
        list(web({"url": f"http://{host}/nest0.xml"}).list())
    assert len([p for p, _ in state.requests if p.startswith("/nest")]) == 5

    many = "".join(f"<url><loc>http://{host}/p{n}</loc></url>" for n in range(3000))
    state.pages["/huge.xml"] = (
        200,
        {"Content-Type": "application/xml"},
        f'<?xml version="1.0"?><urlset xmlns="{ns}">{many}</urlset>'.encode(),
    )
    with pytest.raises(EntryTooLarge, match="huge.xml announces"):
        list(web({"url": f"http://{host}/huge.xml"}).list())

    state.pages["/bomb.xml.gz"] = (200, {}, gzip.compress(b"<" * 50_000_000))
    with pytest.raises(BudgetExceeded, match="inflates past 100,000 bytes"):
        list(web({"url": f"http://{host}/bomb.xml.gz"}).list())

    settings.SOURCE_WEB_SITEMAP_MAX_BYTES = 10_000_000
    for n in range(10):
        state.page(f"/p{n}", "page")
    listed = []
    with pytest.raises(
        BudgetExceeded, match="lists 3,000 pages, more than the budget of 10"
    ):
        for item in web({"url": f"http://{host}/huge.xml", "max_pages": 10}).list():
            listed.append(item)
    assert len(listed) == 10


def test_a_site_that_goes_away_mid_listing_cuts_the_listing_short(site, web, settings):
    """A server that stops answering while it is crawled ends the listing
    with SourceError, not with a shorter listing."""
    state, host = site
    settings.SOURCE_WEB_HOSTS = ["127.0.0.1"]
    state.page("/", '<a href="/a">a</a> <a href="/b">b</a>')
    state.page("/a", "a")
    state.page("/b", "b")
    listing = web({"url": f"http://{host}/"}).list()
    assert isinstance(next(listing), Entry)
    state.pages["/a"] = (500, {}, b"down")
    with pytest.raises(
        SourceError, match="answered HTTP 500; the listing .* was cut short"
    ):
        list(listing)


def test_a_start_page_that_is_gone_or_moved_off_site_is_not_an_empty_listing(
    site, web, settings
):
    """A start page answering 404, or redirecting to another site, and a
    sitemap listing no pages end with SourceError: an empty listing would
    read as every page removed."""
    state, host = site
    settings.SOURCE_WEB_HOSTS = ["127.0.0.1", "localhost"]
    port = host.split(":")[1]
    with pytest.raises(SourceError, match="is missing"):
        list(web({"url": f"http://{host}/"}).list())
    state.redirect("/", f"http://localhost:{port}/elsewhere")
    state.page("/elsewhere", "the site moved")
    with pytest.raises(SourceError, match="leads to another site"):
        list(web({"url": f"http://{host}/"}).list())
    state.pages["/empty.xml"] = (200, {"Content-Type": "application/xml"}, b"<urlset/>")
    with pytest.raises(SourceError, match="lists no pages"):
        list(web({"url": f"http://{host}/empty.xml"}).list())


def test_a_server_that_stops_cuts_the_listing_short(web, settings):
    """Nothing listening at all is a SourceError with the reason."""
    settings.SOURCE_WEB_HOSTS = ["127.0.0.1"]
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(Site()))
    port = server.server_address[1]
    server.server_close()
    with pytest.raises(SourceError, match="could not be fetched"):
        list(web({"url": f"http://127.0.0.1:{port}/"}).list())


def test_the_registry_builds_a_web_source_from_its_configuration(settings):
    """``web`` is a kind in the one table; a bad start URL is refused, and
    so is a kind that is not in the table."""
    settings.SOURCE_WEB_HOSTS = ["docs.example"]
    assert isinstance(build_source("web", {"url": "https://docs.example/"}), WebSource)
    with pytest.raises(SourceConfigError, match="http"):
        build_source("web", {"url": "file:///etc/passwd"})
    with pytest.raises(SourceConfigError, match="positive"):
        build_source("web", {"url": "https://docs.example/", "max_pages": -1})
    with pytest.raises(SourceConfigError, match="'drive' is not a kind of source"):
        build_source("drive", {})
