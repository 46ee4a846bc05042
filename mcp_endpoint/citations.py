"""Signed, expiring links to a document's original file and to a cited page.

A link carries the grant it was made under (the API key, the sign-in grant of
an OAuth token, or the signed-in user of the playground), and works only while
that grant does: revoking or expiring the key or the sign-in, or removing the
user's access to the channel, ends its links at once,
before CITATION_URL_MAX_AGE. With S3 the link still points here; the view
checks the grant, then redirects to a presigned URL that lives a minute.

A page link (`views.citation_page`) also names the page and the quote's span
in the page text; it opens the page image with the quoted lines highlighted.
Links also name the document's revision ("r"): after the document is given a
new file, they keep opening the revision they were made for (its original and
kept pages, documents.revisions) while its original is kept, and the page view
says that a newer revision exists.
"""

from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.core.files.storage import FileSystemStorage, default_storage
from django.urls import reverse
from django.utils import timezone

from documents import access, revisions
from documents.models import ApiKey, Document, Page, RevisionPage, SignInGrant
from documents.regions import line_regions

SALT = "quire.mcp.citation"
PRESIGNED_SECONDS = 60


class GrantEnded(Exception):
    """The key or user a link was made for no longer opens the channel."""


def _grant(api_key: ApiKey | None, user, grant) -> dict:
    if api_key is not None:
        return {"k": api_key.pk}
    if grant is not None:
        return {"g": grant.pk}
    if user is not None:
        return {"u": user.pk}
    raise ValueError("A citation link needs the key or user it is made for.")


def sign_link(
    payload: dict, *, api_key: ApiKey | None = None, user=None, grant=None
) -> str:
    """A token for `payload` ("d": document id, "c": channel id, anything else
    the view needs) bound to the caller's grant: the API key, the sign-in grant
    of an OAuth token, or the playground's user."""
    return signing.dumps({**payload, **_grant(api_key, user, grant)}, salt=SALT)


def open_link(token: str) -> dict:
    """The payload of a valid token whose grant still opens its channel.

    Raises signing.BadSignature (or its subclass SignatureExpired) for a
    forged, altered or stale token, GrantEnded when its key or user lost access.
    """
    payload = signing.loads(token, salt=SALT, max_age=settings.CITATION_URL_MAX_AGE)
    if not _grant_holds(payload):
        raise GrantEnded
    return payload


def _grant_holds(payload: dict) -> bool:
    channel_id = payload.get("c")
    if "k" in payload:
        api_key = ApiKey.objects.filter(
            pk=payload["k"], channels__pk=channel_id
        ).first()
        return api_key is not None and api_key.is_active(timezone.now())
    if "g" in payload:
        return SignInGrant.objects.filter(
            pk=payload["g"], channel_id=channel_id, revoked_at__isnull=True
        ).exists()
    if "u" in payload:
        user = get_user_model().objects.filter(pk=payload["u"]).first()
        return (
            user is not None
            and access.channels_for(user, access.READ).filter(pk=channel_id).exists()
        )
    return False


def citation_url(
    document: Document,
    *,
    base_url: str,
    page: int | None = None,
    api_key: ApiKey | None = None,
    user=None,
    grant=None,
) -> str:
    """An absolute link that opens the original; `#page=<n>` on PDFs."""
    token = sign_link(
        {"d": document.pk, "c": document.channel_id, "r": document.revision},
        api_key=api_key,
        user=user,
        grant=grant,
    )
    url = base_url + reverse("mcp_citation", args=[token])
    if page is not None and document.content_type.lower().startswith("application/pdf"):
        url += f"#page={page}"
    return url


def document_for_token(token: str) -> Document | None:
    """The ready document a token names, as of the revision it names (None when
    it is gone, or that revision's original is); raises as open_link does."""
    payload = open_link(token)
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
    return default_storage.url(document.file.name, expire=PRESIGNED_SECONDS)


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
    span: tuple[int, int] | None = None,
    api_key: ApiKey | None = None,
    user=None,
    grant=None,
) -> str:
    """An absolute link to the page view: the page with the quote at `span`
    (offsets into the page text) highlighted, scrolled to the quote."""
    payload = {"d": document.pk, "c": document.channel_id, "p": page}
    if document.revision is not None:
        payload["r"] = document.revision
    if span is not None:
        payload["s"], payload["e"] = span
    token = sign_link(payload, api_key=api_key, user=user, grant=grant)
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


def read_citation_token(token: str) -> CitationTarget:
    """The target of a valid token; raises as open_link does, and
    signing.BadSignature for a signed payload of the wrong shape."""
    payload = open_link(token)
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
    before: str
    quoted: str
    after: str
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
        before=text[:start],
        quoted=text[start:end],
        after=text[end:],
        revision=target.revision
        if _older(target.revision, document)
        else document.revision,
        newer_revision=document.revision if _older(target.revision, document) else None,
    )
