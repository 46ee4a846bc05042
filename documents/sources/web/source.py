"""The website source: a start page crawled through same-site links, or a
sitemap's pages, with ``robots.txt`` obeyed and page, byte and sitemap budgets.

Link and sitemap parsing are trafilatura's and courlan's; what reaches the
network goes through ``fetch.Fetcher``, which enforces the address rules.
"""

from __future__ import annotations

import tempfile
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit
from urllib.robotparser import RobotFileParser

import courlan
from django.conf import settings
from trafilatura.utils import decode_file

from documents.sources.base import (
    BoundedReader,
    BudgetExceeded,
    Entry,
    EntryGone,
    EntryTooLarge,
    Skipped,
    Source,
    SourceConfigError,
    SourceError,
    too_large,
)
from documents.sources.web.addresses import policy_from
from documents.sources.web.fetch import (
    REDIRECTS,
    Fetcher,
    Pacer,
    Response,
    Unreachable,
)
from documents.sources.web.pages import (
    canonical,
    is_html,
    meta_tags,
    origin,
    page_version,
)
from documents.sources.web.robots import read_robots
from documents.sources.web.sitemaps import is_sitemap_url, read_sitemaps


class WebSource(Source):
    """Pages of one site (one scheme, host and port); key and ``source_url`` =
    the page's URL after redirects, without its fragment; version = ETag, else
    Last-Modified, else a hash of the body; metadata = the page's ``<meta>``
    tags and title."""

    kind = "web"

    def __init__(
        self,
        *,
        url: str,
        fetcher: Fetcher,
        max_bytes: int,
        max_pages: int,
        max_total_bytes: int,
        max_sitemaps: int,
        sitemap_max_bytes: int,
        sitemap: bool | None = None,
    ) -> None:
        self.url = canonical(url)
        self.site = origin(self.url)
        self.fetcher = fetcher
        self.max_bytes = max_bytes
        self.max_pages = max_pages
        self.max_total_bytes = max_total_bytes
        self.max_sitemaps = max_sitemaps
        self.sitemap_max_bytes = sitemap_max_bytes
        self.sitemap = is_sitemap_url(self.url) if sitemap is None else sitemap
        self.spool: tempfile.TemporaryDirectory[str] | None = None
        self.bodies: dict[str, tuple[str, Path]] = {}
        self.robots: RobotFileParser | None = None

    @classmethod
    def from_config(
        cls,
        config: Mapping[str, Any],
        *,
        max_bytes: int,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], None] | None = None,
        resolver: Callable[[str, int], list[str]] | None = None,
    ) -> WebSource:
        url = config.get("url")
        parts = urlsplit(url) if isinstance(url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise SourceConfigError("A web source needs an http(s) start URL.")
        extra = {"resolver": resolver} if resolver else {}
        policy = policy_from(
            settings.SOURCE_WEB_HOSTS,
            public_only=settings.SOURCE_WEB_PUBLIC_ONLY,
            **extra,
        )
        if not settings.SOURCE_WEB_HOSTS and not settings.SOURCE_WEB_PUBLIC_ONLY:
            raise SourceConfigError(
                "No websites may be synced: the operator allows no SOURCE_WEB_HOSTS "
                "and SOURCE_WEB_PUBLIC_ONLY is off."
            )
        pacing = {k: v for k, v in (("clock", clock), ("sleep", sleep)) if v}
        fetcher = Fetcher(
            policy,
            Pacer(settings.SOURCE_WEB_DELAY, **pacing),
            timeout=settings.SOURCE_WEB_TIMEOUT,
            max_redirects=settings.SOURCE_WEB_MAX_REDIRECTS,
            user_agent=settings.SOURCE_WEB_USER_AGENT,
        )
        sitemap = config.get("sitemap")
        return cls(
            url=url,
            fetcher=fetcher,
            max_bytes=max_bytes,
            max_pages=cls.budget(config, "max_pages", settings.SOURCE_WEB_MAX_PAGES),
            max_total_bytes=cls.budget(
                config, "max_bytes", settings.SOURCE_WEB_MAX_BYTES
            ),
            max_sitemaps=settings.SOURCE_WEB_MAX_SITEMAPS,
            sitemap_max_bytes=settings.SOURCE_WEB_SITEMAP_MAX_BYTES,
            sitemap=sitemap if isinstance(sitemap, bool) else None,
        )

    @staticmethod
    def budget(config: Mapping[str, Any], name: str, ceiling: int) -> int:
        """A source's own budget, at most the operator's."""
        value = config.get(name)
        if value is None:
            return ceiling
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise SourceConfigError(f"{name} is a positive whole number.")
        return min(value, ceiling)

    @classmethod
    def config_for(cls, location: str, **options: Any) -> dict[str, Any]:
        """A start page or a sitemap URL; ``max_pages`` if given."""
        config: dict[str, Any] = {"url": location.strip()}
        if options.get("max_pages"):
            config["max_pages"] = options["max_pages"]
        return config

    @staticmethod
    def location_of(config: Mapping[str, Any]) -> str:
        return str(config.get("url", ""))

    def list(self, known: Mapping[str, str] | None = None) -> Iterator[Entry | Skipped]:
        self.close()
        self.spool = tempfile.TemporaryDirectory(prefix="quire-web-")
        self.robots = read_robots(self.fetcher, self.site)
        if not self.allowed(self.url):
            raise SourceError(f"{self.site}/robots.txt disallows {self.url}.")
        if self.sitemap:
            yield from self.list_sitemap(known or {})
        else:
            yield from self.crawl()

    def crawl(self) -> Iterator[Entry | Skipped]:
        queue = deque([self.url])
        queued = {self.url}
        seen: set[str] = set()
        pages = 0
        used = 0
        while queue:
            if pages >= self.max_pages:
                raise BudgetExceeded(
                    f"The crawl of {self.site} stopped at its budget of "
                    f"{self.max_pages:,} pages with {len(queue):,} links not "
                    "visited; nothing past them is taken as removed."
                )
            url = queue.popleft()
            pages += 1
            outcome = self.fetch_page(url, seen)
            if pages == 1 and (outcome is None or isinstance(outcome[0], Skipped)):
                # Everything else is found from the start page: without it
                # an empty listing would read as "every page was removed".
                why = (
                    outcome[0].reason
                    if outcome
                    else "is missing (404 or 410) or leads to another site"
                )
                raise SourceError(
                    f"The start page {self.url}: {why} Nothing is taken as removed."
                )
            if outcome is None:
                continue
            item, response = outcome
            if response is not None:
                used += len(response.body)
                self.over_bytes(used)
                if is_html(response):
                    for link in self.links(response):
                        if link not in queued:
                            queued.add(link)
                            queue.append(link)
            yield item

    def list_sitemap(self, known: Mapping[str, str]) -> Iterator[Entry | Skipped]:
        found, unread = read_sitemaps(
            self.fetcher,
            self.url,
            max_sitemaps=self.max_sitemaps,
            max_bytes=self.sitemap_max_bytes,
            enough=self.max_pages * 4 + 1000,
        )
        urls = [url for url in found if self.allowed(url)]
        if not urls:
            raise SourceError(
                f"{self.url} lists no pages of {self.site} that robots.txt allows; "
                "nothing is taken as removed."
            )
        seen: set[str] = set()
        used = 0
        for pages, url in enumerate(urls):
            if pages >= self.max_pages:
                raise BudgetExceeded(
                    f"{self.url} lists {len(urls):,} pages, more than the budget "
                    f"of {self.max_pages:,}; nothing past it is taken as removed."
                )
            outcome = self.fetch_page(url, seen, known=known.get(url))
            if outcome is None:
                continue
            item, response = outcome
            if response is not None:
                used += len(response.body)
                self.over_bytes(used)
            yield item
        if unread:
            raise BudgetExceeded(
                f"{self.url} lists far more pages than the budget of "
                f"{self.max_pages:,}; {unread} sitemaps were not read and nothing "
                "past them is taken as removed."
            )

    def over_bytes(self, used: int) -> None:
        if used > self.max_total_bytes:
            raise BudgetExceeded(
                f"The listing of {self.site} stopped at its budget of "
                f"{self.max_total_bytes:,} bytes; nothing past it is taken as removed."
            )

    def fetch_page(
        self, url: str, seen: set[str], *, known: str | None = None
    ) -> tuple[Entry | Skipped, Response | None] | None:
        """The page's entry and response; None for a page that is not there
        (404, 410, off the site, already listed under its redirected URL)."""
        headers = {}
        if known and known.startswith("etag:"):
            headers["If-None-Match"] = known.removeprefix("etag:")
        elif known and known.startswith("modified:"):
            headers["If-Modified-Since"] = known.removeprefix("modified:")
        try:
            response = self.fetcher.get(
                url, max_bytes=self.max_bytes, headers=headers, follow=self.follows
            )
        except Unreachable as exc:
            raise SourceError(
                f"{exc.reason} The listing of {self.site} was cut short."
            ) from None
        except SourceError as exc:
            return Skipped(url, exc.reason), None
        final = canonical(response.url)
        if origin(final) != self.site or response.status in REDIRECTS:
            return None
        if response.status in (404, 410):
            return None
        if response.status == 304 and known:
            seen.add(final)
            return Entry(
                key=url, version=known, name=self.name(url), source_url=url
            ), None
        if response.status >= 500:
            raise SourceError(
                f"{final} answered HTTP {response.status}; the listing of "
                f"{self.site} was cut short."
            )
        if response.status != 200:
            return Skipped(final, f"{final} answered HTTP {response.status}."), None
        if final in seen:
            return None
        seen.add(final)
        version = page_version(response)
        content_type = response.headers.get("content-type", "").split(";")[0].strip()
        metadata: dict[str, Any] = {}
        if is_html(response):
            metadata = meta_tags(decode_file(response.body))
        self.keep(final, version, response.body)
        entry = Entry(
            key=final,
            version=version,
            name=self.name(final),
            size=len(response.body),
            content_type=content_type or None,
            metadata=metadata,
            source_url=final,
        )
        return entry, response

    def links(self, response: Response) -> list[str]:
        """Same-site links of an HTML page that robots.txt allows."""
        try:
            found = courlan.extract_links(
                decode_file(response.body),
                url=response.url,
                external_bool=False,
                no_filter=True,
                with_nav=True,
                strict=False,
            )
        except ValueError:
            return []
        links = []
        for link in sorted(found):
            link = canonical(link)
            if origin(link) == self.site and self.allowed(link):
                links.append(link)
        return links

    def follows(self, url: str) -> bool:
        """Whether a redirect to ``url`` is followed: robots.txt rules the
        site's own pages; other hosts are for the address policy to judge."""
        return origin(url) != self.site or self.allowed(url)

    def allowed(self, url: str) -> bool:
        return self.robots is None or self.robots.can_fetch(
            self.fetcher.user_agent, url
        )

    def open(self, entry: Entry) -> IO[bytes]:
        kept = self.bodies.get(entry.key)
        if kept is not None and kept[0] == entry.version:
            return BoundedReader(
                open(kept[1], "rb"),  # noqa: SIM115 (returned to the caller)
                limit=self.max_bytes,
                name=entry.key,
            )
        if entry.size is not None and entry.size > self.max_bytes:
            raise EntryTooLarge(too_large(entry.key, self.max_bytes))
        response = self.fetcher.get(entry.key, max_bytes=self.max_bytes)
        if response.status in (404, 410):
            raise EntryGone(f"{entry.key} was removed since the listing.")
        if response.status != 200:
            raise SourceError(f"{entry.key} answered HTTP {response.status}.")
        return BoundedReader(
            tempfile_with(response.body), limit=self.max_bytes, name=entry.key
        )

    def keep(self, key: str, version: str, body: bytes) -> None:
        """Hold the body fetched while listing, so opening it costs no second
        request; bounded by the byte budget, removed by ``close``."""
        assert self.spool is not None
        path = Path(self.spool.name) / f"{len(self.bodies)}.body"
        path.write_bytes(body)
        self.bodies[key] = (version, path)

    def close(self) -> None:
        if self.spool is not None:
            self.spool.cleanup()
        self.spool = None
        self.bodies = {}

    @staticmethod
    def name(url: str) -> str:
        path = urlsplit(url).path.rstrip("/")
        return path.rsplit("/", 1)[-1] or urlsplit(url).hostname or url


def tempfile_with(body: bytes) -> IO[bytes]:
    handle = tempfile.TemporaryFile()  # noqa: SIM115 (returned to the caller)
    handle.write(body)
    handle.seek(0)
    return handle
