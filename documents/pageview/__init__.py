"""A document page as a person reads it: the one renderer behind the citation
page, the admin's page preview and any other page view (an MCP App's).

    render_page_html(page, highlight_spans, *, content_type, mark_id="quote")
        -> SafeString

`page` is anything with the stored page `text` (a Page or a RevisionPage);
`highlight_spans` are (start, end) offsets into that text, as citation links
carry them. Text formats (FORMATS entries with `markdown_pages`) come out as
the document's structure (headings, paragraphs, lists, tables, code, quotes);
every other page as its paragraphs, with the lines its reader marked as
headings (a PDF's) as headings. Each span is wrapped in
`<mark class="quire-mark">` where it sits, the first one with `id=mark_id` to
scroll to; the result has passed the allow-list sanitiser and is ready for a
template. Style it with documents/static/documents/pageview.css
(`.quire-document`).
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

from django.http import HttpRequest
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.safestring import SafeString, mark_safe

from documents.ingestion.context import marked_headings
from documents.ingestion.formats import pages_are_markdown
from documents.pageview.markdown import render_markdown, render_plain
from documents.pageview.sanitise import sanitise_html
from documents.results import provenance_of

__all__ = ["PageHeader", "back_url", "render_page_html", "sanitise_html"]


class HasText(Protocol):
    text: str


def render_page_html(
    page: HasText,
    highlight_spans: Sequence[tuple[int, int]] = (),
    *,
    content_type: str,
    mark_id: str = "quote",
) -> SafeString:
    """The page's text as sanitised HTML, the spans marked in place.

    Spans outside the text or empty are ignored (a stale link shows the page
    unmarked), so a caller may pass what a link carries unchecked.
    """
    text = page.text or ""
    spans = sorted(
        (start, end) for start, end in highlight_spans if 0 <= start < end <= len(text)
    )
    if pages_are_markdown(content_type):
        html = render_markdown(text, spans, mark_id=mark_id)
    else:
        headings = marked_headings(getattr(page, "lines", None))
        html = render_plain(text, spans, mark_id=mark_id, headings=headings)
    return mark_safe(sanitise_html(html))


def back_url(
    request: HttpRequest, *, fallback: str = "", unless_under: str = ""
) -> str:
    """Where the person came from when it is a page of this site (the
    Referer) and not under `unless_under`, else `fallback`: a back link never
    leads to another site, nor carries a URL another site chose."""
    referer = request.headers.get("referer", "")
    if not referer or referer == request.build_absolute_uri():
        return fallback
    if not url_has_allowed_host_and_scheme(
        referer, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return fallback
    if unless_under and urlsplit(referer).path.startswith(unless_under):
        return fallback
    return referer


@dataclass(frozen=True)
class PageHeader:
    """What heads every page view (documents/pageview/header.html): the
    document, the page, the revision, the original and the way back."""

    title: str
    number: int
    # None when the page belongs to an older revision (its count may differ).
    page_count: int | None
    revision: int
    original_url: str
    # "at this page" when the original opens at the page (PDFs).
    original_at_page: bool = False
    # Empty: the page offers the browser's own back (when it has history).
    back_url: str = ""
    back_label: str = "Back"
    newer_revision: int | None = None
    source: str | None = None
    source_url: str | None = None
    previous_url: str = ""
    next_url: str = ""

    @classmethod
    def for_page(
        cls,
        document,
        number: int,
        *,
        original_url: str,
        revision: int | None = None,
        newer_revision: int | None = None,
        **links: str,
    ) -> "PageHeader":
        """The header of page `number` of `document` (of `revision`, its
        current one by default): a PDF's original opens at that page; the
        source it was synced from is named. `links`: back_url, back_label,
        previous_url, next_url."""
        at_page = document.content_type.lower().startswith("application/pdf")
        return cls(
            title=str(document),
            number=number,
            # An older revision's page count may differ from the document's.
            page_count=None if newer_revision else document.page_count,
            revision=document.revision if revision is None else revision,
            newer_revision=newer_revision,
            original_url=f"{original_url}#page={number}" if at_page else original_url,
            original_at_page=at_page,
            **links,
            **provenance_of(document),
        )
