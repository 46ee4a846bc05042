"""Hostile sources at the level of a sync: each ends with a clear reason on
the sync's row or on the failed entry, and loses nothing already in the
channel, even when the source deletes removed entries."""

from __future__ import annotations

import gzip
import os
from collections.abc import Iterator
from http.server import ThreadingHTTPServer

import pytest

from documents.models import Document, SourceSync
from documents.sources.s3 import S3Source
from documents.tests.sources.servers import Site, handler_for, serve
from documents.tests.syncing import add_folder_source, add_source, by_key, sync, write

pytestmark = pytest.mark.django_db

Status = SourceSync.Status
NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


@pytest.fixture
def web_settings(settings):
    settings.SOURCE_WEB_HOSTS = ["127.0.0.1"]
    settings.SOURCE_WEB_PUBLIC_ONLY = False
    settings.SOURCE_WEB_DELAY = 0.0


@pytest.fixture
def local_site() -> Iterator[tuple[Site, str]]:
    """The site under the name localhost, which the operator allows by name
    in public-only mode; 127.0.0.1 is not allowed."""
    state = Site()
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(state))
    serve(server)
    yield state, f"localhost:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def html(text: str, *links: str) -> str:
    anchors = " ".join(f'<a href="{link}">{link}</a>' for link in links)
    return f"<html><body><p>{text}</p>{anchors}</body></html>"


def keys(source) -> set[str]:
    return set(by_key(source))


def reasons(row: SourceSync) -> dict[str, str]:
    return {error["key"].rsplit("/", 1)[-1]: error["reason"] for error in row.errors}


def test_links_and_redirects_to_private_addresses_fail_alone(
    make_channel, local_site, settings
):
    """In public-only mode, a page linking to 127.0.0.1 does not make the
    sync call it (another site), and pages redirecting to loopback or private
    addresses fail with the reason; the pages already synced stay."""
    state, host = local_site
    port = host.split(":")[1]
    settings.SOURCE_WEB_HOSTS = ["localhost"]
    settings.SOURCE_WEB_PUBLIC_ONLY = True
    settings.SOURCE_WEB_DELAY = 0.0
    state.page("/", html("The start page of the plant manuals.", "/guide"))
    state.page("/guide", html("Prime the pump before starting it."))
    source = add_source(
        make_channel(), "web", {"url": f"http://{host}/"}, delete_removed=True
    )
    first = sync(source)
    assert (first.status, first.added) == (Status.DONE, 2), first.errors

    state.page(
        "/",
        html(
            "The start page, now with hostile links.",
            "/guide",
            f"http://127.0.0.1:{port}/admin",
            "/to-loopback",
            "/to-intranet",
        ),
    )
    state.redirect("/to-loopback", f"http://127.0.0.1:{port}/admin")
    state.redirect("/to-intranet", "http://10.1.2.3/")
    row = sync(source)
    assert row.status == Status.DONE, row.reason
    assert (row.revised, row.unchanged, row.removed, row.failed) == (1, 1, 0, 2)
    why = reasons(row)
    assert "127.0.0.1 is a loopback address" in why["to-loopback"]
    assert "SOURCE_WEB_PUBLIC_ONLY" in why["to-loopback"]
    assert "10.1.2.3 is a private address" in why["to-intranet"]
    assert not state.paths("/admin")
    assert {h for _, h in state.requests} == {host}
    assert keys(source) == {f"http://{host}/", f"http://{host}/guide"}


def test_an_endless_calendar_stops_at_the_page_budget_and_removes_nothing(
    make_channel, site, web_settings
):
    """A page that starts an endless calendar of links ends the crawl at the
    source's page budget: the sync is partial, says why, and a page the crawl
    did not reach is not removed."""
    state, host = site
    state.page("/", html("Plant manuals.", "/guide"))
    state.page("/guide", html("The pump guide.", "/guide/deep"))
    state.page("/guide/deep", html("Deep inside the guide."))
    source = add_source(
        make_channel(),
        "web",
        {"url": f"http://{host}/", "max_pages": 3},
        delete_removed=True,
    )
    assert sync(source).added == 3
    state.page("/", html("Plant manuals and a calendar.", "/calendar/1", "/guide"))
    row = sync(source)
    assert row.status == Status.PARTIAL
    assert "budget of 3 pages" in row.reason and "no document was removed" in row.reason
    assert (row.added, row.removed) == (1, 0)
    assert f"http://{host}/guide/deep" in keys(source)
    assert len(state.paths("/calendar/")) == 1


def test_a_2_gb_file_is_never_downloaded(
    make_channel, site, web_settings, folder, settings
):
    """A page announcing 2 GB, a page streaming without end and a sparse 2 GB
    file in a folder each fail with the reason, read no further than the
    upload limit (UPLOAD_MAX_BYTES), and the rest syncs."""
    state, host = site
    settings.UPLOAD_MAX_BYTES = 1024 * 1024
    state.page("/", html("Downloads.", "/big.pdf", "/endless.pdf", "/small"))
    state.page("/small", html("A small page beside big files."))
    state.pages["/big.pdf"] = (
        200,
        {"Content-Type": "application/pdf", "Content-Length": str(2 * 1024**3)},
        lambda: iter(()),
    )

    def endless() -> Iterator[bytes]:
        while True:
            yield b"%" * 65536

    state.pages["/endless.pdf"] = (200, {"Content-Type": "application/pdf"}, endless)
    channel = make_channel()
    web = add_source(channel, "web", {"url": f"http://{host}/"}, name="site")
    row = sync(web)
    assert (row.status, row.added, row.failed) == (Status.DONE, 2, 2), row.errors
    why = reasons(row)
    assert "announces 2,147,483,648 bytes" in why["big.pdf"]
    assert "larger than the" in why["endless.pdf"]
    # What the server sent: the limit, and what socket buffers took before
    # the sync hung up.
    assert state.sent < 32 * 1024 * 1024

    write(folder / "small.txt", "A small file beside a big one.")
    with open(folder / "huge.pdf", "wb") as handle:
        handle.truncate(2 * 1024**3)
    assert os.stat(folder / "huge.pdf").st_blocks == 0
    files = add_folder_source(channel, folder)
    row = sync(files)
    assert (row.status, row.added, row.failed) == (Status.DONE, 1, 1), row.errors
    assert "larger than the" in reasons(row)["huge.pdf"]
    assert keys(files) == {"small.txt"}


def sitemap(host: str, *paths: str) -> bytes:
    urls = "".join(f"<url><loc>http://{host}{path}</loc></url>" for path in paths)
    return f'<?xml version="1.0"?><urlset xmlns="{NS}">{urls}</urlset>'.encode()


def test_a_sitemap_bomb_fails_the_sync_and_changes_nothing(
    make_channel, site, web_settings, settings
):
    """A sitemap that turns into a gzip bomb, then into an endless nesting of
    sitemaps, fails the sync before any page with the reason; the pages
    synced from it before stay."""
    state, host = site
    settings.SOURCE_WEB_SITEMAP_MAX_BYTES = 100_000
    settings.SOURCE_WEB_MAX_SITEMAPS = 5
    xml = {"Content-Type": "application/xml"}
    state.pages["/sitemap.xml"] = (200, xml, sitemap(host, "/a", "/b"))
    state.page("/a", html("Page alpha of the site."))
    state.page("/b", html("Page beta of the site."))
    source = add_source(
        make_channel(),
        "web",
        {"url": f"http://{host}/sitemap.xml"},
        delete_removed=True,
    )
    assert sync(source).added == 2

    state.pages["/sitemap.xml"] = (200, xml, gzip.compress(b"<" * 50_000_000))
    row = sync(source)
    assert row.status == Status.FAILED
    assert "inflates past 100,000 bytes" in row.reason
    assert "Nothing in the channel was changed" in row.reason
    assert keys(source) == {f"http://{host}/a", f"http://{host}/b"}

    for n in range(50):
        state.pages[f"/nest{n}.xml"] = (
            200,
            xml,
            f'<?xml version="1.0"?><sitemapindex xmlns="{NS}"><sitemap><loc>'
            f"http://{host}/nest{n + 1}.xml</loc></sitemap></sitemapindex>".encode(),
        )
    state.pages["/sitemap.xml"] = state.pages["/nest0.xml"]
    row = sync(source)
    assert row.status == Status.FAILED
    assert "more than 5 sitemaps" in row.reason
    assert keys(source) == {f"http://{host}/a", f"http://{host}/b"}


def test_a_site_that_stops_mid_listing_removes_nothing(
    make_channel, site, web_settings
):
    """A server that stops answering after the first page cuts the listing
    short: the sync is partial with the reason and no page is removed."""
    state, host = site
    state.page("/", html("Plant manuals.", "/a", "/b"))
    state.page("/a", html("Page alpha."))
    state.page("/b", html("Page beta."))
    source = add_source(
        make_channel(), "web", {"url": f"http://{host}/"}, delete_removed=True
    )
    assert sync(source).added == 3
    state.gone_after = "/"
    row = sync(source)
    assert row.status == Status.PARTIAL
    assert "could not be fetched" in row.reason
    assert "no document was removed" in row.reason
    assert (row.unchanged, row.removed) == (1, 0)
    assert len(keys(source)) == 3


def test_a_bucket_deleted_mid_listing_removes_nothing(
    make_channel, store, moto_server, monkeypatch
):
    """The bucket is deleted while the sync lists its second page: the sync
    is partial, names the bucket, and no document is removed."""
    bucket, client = store
    monkeypatch.setattr(S3Source, "page_size", 2)
    names = [f"n{n}.txt" for n in range(5)]
    for name in names:
        client.put_object(Bucket=bucket, Key=name, Body=f"Note {name}.".encode())
    source = add_source(
        make_channel(),
        "s3",
        {"store": "archive", "bucket": bucket},
        delete_removed=True,
    )
    assert sync(source).added == 5

    def delete_bucket(method: str, path: str, query: str) -> None:
        if "continuation-token" in query and moto_server.before is not None:
            moto_server.before = None
            for name in names:
                client.delete_object(Bucket=bucket, Key=name)
            client.delete_bucket(Bucket=bucket)

    moto_server.before = delete_bucket
    row = sync(source)
    assert row.status == Status.PARTIAL
    assert f"The bucket {bucket!r} no longer exists" in row.reason
    assert "no document was removed" in row.reason
    assert row.removed == 0
    assert keys(source) == set(names)
    assert Document.objects.count() == 5
