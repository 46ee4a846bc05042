"""Signed, expiring links to a document's original file and to a cited page.

A link is signed for the caller it was made for (its subject: `key:<id>`,
`grant:<id>` for a sign-in token, `user:<id>` for the playground's person),
and every open re-admits that caller by the rule of documents.access.caller:
revoking or expiring the key, removing its channel, revoking the sign-in,
removing the person as reader or deactivating them ends its links at once,
before CITATION_URL_MAX_AGE. With S3 the link still points here; the view
re-admits the caller, then redirects to a presigned URL that lives a minute.

A page link (`views.citation_page`) also names the page and the quote's span
in the page text; it opens the page image with the quoted lines highlighted.
Links also name the document's revision ("r"): after the document is given a
new file, they keep opening the revision they were made for (its original and
kept pages, documents.revisions) while its original is kept, and the page view
says that a newer revision exists.
"""

from dataclasses import dataclass

from django.conf import settings
from django.core import signing
from django.core.files.storage import FileSystemStorage, default_storage
from django.urls import reverse

from documents import revisions
from documents.access import Caller, Scope
from documents.models import Document, Page, RevisionPage
from documents.originals import presigned_parameters
from documents.pageview import PageHeader, render_page_html
from documents.regions import line_regions

SALT = "quire.mcp.citation"
PRESIGNED_SECONDS = 60


class GrantEnded(Exception):
    """The caller a link was made for may no longer read the channel."""


def sign_link(payload: dict, *, caller: Caller) -> str:
    """A token for `payload` ("d": document id, "c": channel id, anything else
    the view needs) bound to the caller it is made for."""
    if not caller.subject:
        raise ValueError("A citation link needs the caller it is made for.")
    return signing.dumps({**payload, "a": caller.subject}, salt=SALT)


def open_link(token: str, *, address: str = "") -> dict:
    """The payload of a valid token whose caller may still read its channel.

    Raises signing.BadSignature (or its subclass SignatureExpired) for a
    forged, altered or stale token, GrantEnded when its caller lost access.
    """
    payload = signing.loads(token, salt=SALT, max_age=settings.CITATION_URL_MAX_AGE)
    subject, channel_id = payload.get("a"), payload.get("c")
    if not isinstance(subject, str) or not isinstance(channel_id, int):
        raise signing.BadSignature("Malformed citation link.")
    caller = Caller.from_subject(subject, via="citation", address=address)
    if not caller.may(channel_id, Scope.READ):
        raise GrantEnded
    return payload


def citation_url(
    document: Document,
    *,
    base_url: str,
    caller: Caller,
    page: int | None = None,
) -> str:
    """An absolute link that opens the original; `#page=<n>` on PDFs."""
    token = sign_link(
        {"d": document.pk, "c": document.channel_id, "r": document.revision},
        caller=caller,
    )
    url = base_url + reverse("mcp_citation", args=[token])
    if page is not None and document.content_type.lower().startswith("application/pdf"):
        url += f"#page={page}"
    return url


def document_for_token(token: str, *, address: str = "") -> Document | None:
    """The ready document a token names, as of the revision it names (None when
    it is gone, or that revision's original is); raises as open_link does."""
    payload = open_link(token, address=address)
    document = (
        Document.objects.ready()
        .filter(pk=payload["d"], channel_id=payload["c"])
        .first()
    )
    if document is None or not _older(payload.get("r"), document):
        return document
    kept = document.revisions.filter(number=payload["r"]).exclude(file="").first()
    return revisions.as_read(document, kept) if kept is not None else None


def _older(revision, document: Document) -> bool:
    return isinstance(revision, int) and revision < document.revision


def stored_file_url(document: Document) -> str | None:
    """A short-lived URL of the stored original when the storage serves files
    itself (S3); None when Quire serves them (the filesystem)."""
    if isinstance(default_storage, FileSystemStorage):
        return None
    return default_storage.url(
        document.file.name,
        parameters=presigned_parameters(document),
        expire=PRESIGNED_SECONDS,
    )


def stored_page_image_url(image) -> str | None:
    """A short-lived URL of a stored page image when the storage serves files
    itself (S3); None when Quire serves them."""
    if isinstance(default_storage, FileSystemStorage):
        return None
    return default_storage.url(image.name, expire=PRESIGNED_SECONDS)


def citation_page_url(
    document: Document,
    *,
    base_url: str,
    page: int,
    caller: Caller,
    span: tuple[int, int] | None = None,
) -> str:
    """An absolute link to the page view: the page with the quote at `span`
    (offsets into the page text) highlighted, scrolled to the quote."""
    payload = {"d": document.pk, "c": document.channel_id, "p": page}
    if document.revision is not None:
        payload["r"] = document.revision
    if span is not None:
        payload["s"], payload["e"] = span
    token = sign_link(payload, caller=caller)
    return base_url + reverse("mcp_citation_page", args=[token]) + "#quote"


@dataclass(frozen=True)
class CitationTarget:
    """What a valid page link points at."""

    document_id: int
    channel_id: int
    page: int | None = None
    start: int | None = None
    end: int | None = None
    revision: int | None = None


def read_citation_token(token: str, *, address: str = "") -> CitationTarget:
    """The target of a valid token; raises as open_link does, and
    signing.BadSignature for a signed payload of the wrong shape."""
    payload = open_link(token, address=address)
    try:
        return CitationTarget(
            int(payload["d"]),
            int(payload["c"]),
            *(
                None if payload.get(name) is None else int(payload[name])
                for name in ("p", "s", "e", "r")
            ),
        )
    except (KeyError, TypeError, ValueError):
        raise signing.BadSignature("Malformed citation link.") from None


@dataclass
class CitedPage:
    """A page as its citation link shows it: the quote's lines marked."""

    document: Document
    # A RevisionPage (same fields) when the link was made for an older revision.
    page: Page | RevisionPage
    # The quote's line boxes in thousandths of the page (SVG viewBox 0 0 1000 1000).
    marks: list[dict]
    quote: str
    # The quote's offsets in the page text; None for a link to the whole page.
    span: tuple[int, int] | None = None
    # The revision shown, and the document's current one when that is newer.
    revision: int = 1
    newer_revision: int | None = None


def cited_page(target: CitationTarget) -> CitedPage | None:
    """The page a page link names, with its quote (of the revision it names);
    None when the document, the page or that revision's pages are gone."""
    if target.page is None:
        return None
    document = (
        Document.objects.ready()
        .filter(pk=target.document_id, channel_id=target.channel_id)
        .first()
    )
    if document is None:
        return None
    if _older(target.revision, document):
        page = revisions.revision_page(document, target.revision, target.page)
    else:
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
        span=(start, end) if end else None,
        revision=target.revision
        if _older(target.revision, document)
        else document.revision,
        newer_revision=document.revision if _older(target.revision, document) else None,
    )


def page_view_context(
    cited: CitedPage, *, original_url: str, image_url: str, back_url: str
) -> dict:
    """The template context of the page view (documents/pageview/*.html) of a
    cited page: its header, and the page as the document looks with the quote
    marked on its image and in its text."""
    document, page = cited.document, cited.page
    spans = [cited.span] if cited.span else []
    has_image = bool(page.image)
    return {
        "header": PageHeader.for_page(
            document,
            page.number,
            original_url=original_url,
            revision=cited.revision,
            newer_revision=cited.newer_revision,
            back_url=back_url,
        ),
        "title": str(document),
        "number": page.number,
        "image_url": image_url if has_image else "",
        "marks": cited.marks,
        "quote": cited.quote,
        "unplaced": bool(cited.quote and not cited.marks),
        # On an image with the quote's lines drawn, those lines are what the
        # page scrolls to; otherwise its mark in the text.
        "page_html": render_page_html(
            page,
            spans,
            content_type=document.content_type,
            mark_id="" if has_image and cited.marks else "quote",
        ),
    }
