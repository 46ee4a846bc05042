"""Sitemaps for the web source: trafilatura's parser, fed through our
fetcher, with the nesting and size of sitemaps bounded."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import courlan
from trafilatura.sitemaps import DETECT_SITEMAP_LINK, SitemapObject
from trafilatura.utils import safe_relative_url

from documents.sources.base import BudgetExceeded, SourceError
from documents.sources.web.fetch import Fetcher
from documents.sources.web.pages import canonical, origin


def is_sitemap_url(url: str) -> bool:
    path = urlsplit(url).path.lower()
    return path.endswith((".xml", ".xml.gz")) or path.rsplit("/", 1)[-1] == "sitemap"


def decompress(data: bytes, url: str, limit: int) -> bytes:
    """A gzip sitemap, inflated to at most ``limit`` bytes: a gzip bomb is
    refused after ``limit + 1`` bytes of output."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(data, limit + 1)
    except zlib.error:
        raise SourceError(f"{url} is not a valid gzip file.") from None
    if len(out) > limit:
        raise BudgetExceeded(
            f"{url} inflates past {limit:,} bytes (SOURCE_WEB_SITEMAP_MAX_BYTES)."
        )
    return out


class FetchedSitemap(SitemapObject):
    """trafilatura's sitemap parser, fed by our fetcher."""

    def __init__(self, fetch_text: Callable[[str], str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fetch_text = fetch_text

    def fetch(self) -> None:
        self.content = self.fetch_text(self.current_url)
        self.seen.add(self.current_url)

    def handle_link(self, link: str) -> None:
        """trafilatura's, without its domain-name heuristics, which drop hosts
        given as addresses; the same-site rule is the source's."""
        if link == self.current_url:
            return
        link = courlan.clean_url(safe_relative_url(self.base_url, link)) or ""
        if not link:
            return
        if DETECT_SITEMAP_LINK.search(link):
            self.sitemap_urls.append(link)
        else:
            self.urls.append(link)


def read_sitemaps(
    fetcher: Fetcher, url: str, *, max_sitemaps: int, max_bytes: int, enough: int
) -> tuple[list[str], int]:
    """The page URLs on ``url``'s site of the sitemap at ``url`` and the
    sitemaps it nests, and how many sitemaps were left unread once ``enough``
    pages were found; BudgetExceeded past ``max_sitemaps``."""
    site = origin(url)

    def fetch_text(sitemap_url: str) -> str:
        response = fetcher.get(sitemap_url, max_bytes=max_bytes)
        if response.status != 200:
            raise SourceError(
                f"The sitemap {sitemap_url} answered HTTP {response.status}; the "
                "listing was cut short."
            )
        body = response.body
        if body[:2] == b"\x1f\x8b":
            body = decompress(body, sitemap_url, max_bytes)
        return body.decode("utf-8", "replace")

    sitemap = FetchedSitemap(
        fetch_text,
        base_url=site,
        domain=urlsplit(url).hostname or "",
        sitemapsurls=[url],
        external=True,
    )
    while sitemap.sitemap_urls:
        if len(sitemap.seen) >= max_sitemaps:
            raise BudgetExceeded(
                f"{url} nests more than {max_sitemaps} sitemaps "
                "(SOURCE_WEB_MAX_SITEMAPS); the listing was cut short."
            )
        sitemap.current_url = sitemap.sitemap_urls.pop()
        sitemap.fetch()
        sitemap.process()
        sitemap.sitemap_urls = [
            s
            for s in dict.fromkeys(sitemap.sitemap_urls)
            if s not in sitemap.seen and origin(s) == site
        ]
        if len(sitemap.urls) > enough:
            break
    urls = [
        u
        for u in dict.fromkeys(canonical(u) for u in sitemap.urls)
        if origin(u) == site
    ]
    return urls, len(sitemap.sitemap_urls)
