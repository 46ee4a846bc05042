"""robots.txt for the web source: read through our fetcher, parsed by the
standard library (as trafilatura's spider does), obeyed for every page and
redirect on the site, its Crawl-delay honoured."""

from __future__ import annotations

from urllib.robotparser import RobotFileParser

from trafilatura.spider import parse_robots

from documents.sources.base import EntryTooLarge, SourceError
from documents.sources.web.fetch import Fetcher

ROBOTS_MAX_BYTES = 512 * 1024
# robots.txt may ask for a slower pace; past this it is taken as this.
MAX_CRAWL_DELAY = 60.0


def read_robots(fetcher: Fetcher, site: str) -> RobotFileParser:
    """The site's rules (RFC 9309: a 4xx allows everything, except 401/403
    which we take as "keep out"; a 5xx stops the listing), slowing the
    fetcher to the site's Crawl-delay."""
    robots_url = f"{site}/robots.txt"
    try:
        response = fetcher.get(robots_url, max_bytes=ROBOTS_MAX_BYTES)
    except EntryTooLarge:
        raise SourceError(f"{robots_url} is larger than expected.") from None
    except SourceError as exc:
        raise SourceError(
            f"{exc.reason} The site was not listed (robots.txt is read first)."
        ) from None
    if response.status >= 500:
        raise SourceError(
            f"{robots_url} answered HTTP {response.status}; a site whose rules "
            "cannot be read is not crawled."
        )
    text = response.body.decode("utf-8", "replace") if response.status == 200 else ""
    rules = parse_robots(robots_url, text)
    if rules is None:
        rules = RobotFileParser(robots_url)
        rules.parse([])
    if response.status in (401, 403):
        rules.disallow_all = True
    delay = rules.crawl_delay(fetcher.user_agent)
    if delay:
        pacer = fetcher.pacer
        pacer.delay = max(pacer.delay, min(float(delay), MAX_CRAWL_DELAY))
    return rules
