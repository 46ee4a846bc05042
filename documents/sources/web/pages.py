"""What the web source makes of one page: its key (one URL per page, whichever
link reached it), its site, its version and its ``<meta>`` tags."""

from __future__ import annotations

import hashlib
from urllib.parse import urldefrag, urlsplit

import lxml.etree
import lxml.html

from documents.sources.web.fetch import Response

HTML_TYPES = ("text/html", "application/xhtml+xml")


def origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.lower()}"


def canonical(url: str) -> str:
    """The key of a page: no fragment, lower-case scheme and host, ``/`` for
    an empty path, so one page is one key whichever link reached it."""
    parts = urlsplit(urldefrag(url)[0])
    path = parts.path or "/"
    query = f"?{parts.query}" if parts.query else ""
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{path}{query}"


def meta_tags(html: str) -> dict[str, str]:
    """``<meta name|property|itemprop=… content=…>`` and the title, by name."""
    try:
        tree = lxml.html.fromstring(html)
    except (ValueError, lxml.etree.ParserError):
        return {}
    found: dict[str, str] = {}
    title = tree.findtext(".//title")
    if title and title.strip():
        found["title"] = title.strip()
    for meta in tree.iter("meta"):
        name = meta.get("name") or meta.get("property") or meta.get("itemprop")
        content = meta.get("content")
        if name and content is not None:
            found[name.strip().lower()] = content.strip()
    return found


def page_version(response: Response) -> str:
    etag = response.headers.get("etag")
    if etag:
        return f"etag:{etag}"
    modified = response.headers.get("last-modified")
    if modified:
        return f"modified:{modified}"
    return f"sha256:{hashlib.sha256(response.body).hexdigest()}"


def is_html(response: Response) -> bool:
    content_type = response.headers.get("content-type", "").lower()
    return content_type.startswith(HTML_TYPES)
