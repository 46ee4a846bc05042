"""Signed, expiring links to a document's original file and to a cited page.

One token format serves both: it names the document and its channel, and for a
page view also the page and the quote's span in the page text. Files on the
local filesystem are served by `views.citation` behind the token; with S3 the
storage's own presigned URL is returned for originals instead. The page view
(`views.citation_page`) shows the page image with the quoted lines highlighted.
"""

from dataclasses import dataclass

from django.conf import settings
from django.core import signing
from django.core.files.storage import FileSystemStorage, default_storage
from django.urls import reverse

from documents.models import Document, Page
from documents.regions import line_regions

SALT = "quire.mcp.citation"


def citation_token(
    document: Document,
    *,
    page: int | None = None,
    span: tuple[int, int] | None = None,
) -> str:
    """The signed token of a citation link (every link is made here)."""
    payload: dict = {"d": document.pk, "c": document.channel_id}
    if page is not None:
        payload["p"] = page
        if span is not None:
            payload["s"], payload["e"] = span
    return signing.dumps(payload, salt=SALT)


@dataclass(frozen=True)
class CitationTarget:
    """What a valid token points at."""

    document_id: int
    channel_id: int
    page: int | None = None
    start: int | None = None
    end: int | None = None


def read_citation_token(token: str) -> CitationTarget:
    """The target of a token; raises signing.BadSignature (or its subclass
    SignatureExpired) for a forged, altered or stale token."""
    payload = signing.loads(token, salt=SALT, max_age=settings.CITATION_URL_MAX_AGE)
    try:
        target = CitationTarget(
            int(payload["d"]),
            int(payload["c"]),
            _optional_int(payload.get("p")),
            _optional_int(payload.get("s")),
            _optional_int(payload.get("e")),
        )
    except (KeyError, TypeError, ValueError):
        raise signing.BadSignature("Malformed citation token.") from None
    return target


def _optional_int(value) -> int | None:
    return None if value is None else int(value)


def citation_url(document: Document, *, base_url: str, page: int | None = None) -> str:
    """An absolute link that opens the original; `#page=<n>` on PDFs."""
    if isinstance(default_storage, FileSystemStorage):
        url = base_url + reverse("mcp_citation", args=[citation_token(document)])
    else:
        url = default_storage.url(document.file.name)
    if page is not None and document.content_type.lower().startswith("application/pdf"):
        url += f"#page={page}"
    return url


def citation_page_url(
    document: Document,
    *,
    base_url: str,
    page: int,
    span: tuple[int, int] | None = None,
) -> str:
    """An absolute link to the page view: the page with the quote at `span`
    (offsets into the page text) highlighted, scrolled to the quote."""
    token = citation_token(document, page=page, span=span)
    return base_url + reverse("mcp_citation_page", args=[token]) + "#quote"


def document_for_token(token: str) -> Document | None:
    """The ready document a token names; raises signing.BadSignature (or its
    subclass SignatureExpired) for a forged, altered or stale token."""
    target = read_citation_token(token)
    return (
        Document.objects.ready()
        .filter(pk=target.document_id, channel_id=target.channel_id)
        .first()
    )


@dataclass
class CitedPage:
    """A page as its citation link shows it: the quote's lines marked."""

    document: Document
    page: Page
    # The quote's line boxes in thousandths of the page (SVG viewBox 0 0 1000 1000).
    marks: list[dict]
    quote: str
    before: str
    quoted: str
    after: str


def cited_page(target: CitationTarget) -> CitedPage | None:
    """The page a page-view token names, with its quote; None when the
    document or page is gone."""
    if target.page is None:
        return None
    document = (
        Document.objects.ready()
        .filter(pk=target.document_id, channel_id=target.channel_id)
        .first()
    )
    if document is None:
        return None
    page = Page.objects.filter(document=document, number=target.page).first()
    if page is None:
        return None
    text = page.text or ""
    start, end = target.start, target.end
    if start is None or end is None or not 0 <= start < end <= len(text):
        start = end = 0  # no quote (or a stale span): the page unmarked
    marks = [
        {
            "x": f"{box['x0'] * 1000:.1f}",
            "y": f"{box['y0'] * 1000:.1f}",
            "width": f"{(box['x1'] - box['x0']) * 1000:.1f}",
            "height": f"{(box['y1'] - box['y0']) * 1000:.1f}",
        }
        for box in (line_regions(page.lines, start, end) if end else [])
    ]
    return CitedPage(
        document=document,
        page=page,
        marks=marks,
        quote=" ".join(text[start:end].split()),
        before=text[:start],
        quoted=text[start:end],
        after=text[end:],
    )
