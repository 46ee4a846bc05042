"""Signed, expiring links to a document's original file.

Files on the local filesystem are served by `views.citation` behind a signed
token; with S3 the storage's own presigned URL is returned instead.
"""

from django.conf import settings
from django.core import signing
from django.core.files.storage import FileSystemStorage, default_storage
from django.urls import reverse

from documents.models import Document

SALT = "quire.mcp.citation"


def citation_token(document: Document) -> str:
    return signing.dumps({"d": document.pk, "c": document.channel_id}, salt=SALT)


def citation_url(document: Document, *, base_url: str, page: int | None = None) -> str:
    """An absolute link that opens the original; `#page=<n>` on PDFs."""
    if isinstance(default_storage, FileSystemStorage):
        url = base_url + reverse("mcp_citation", args=[citation_token(document)])
    else:
        url = default_storage.url(document.file.name)
    if page is not None and document.content_type.lower().startswith("application/pdf"):
        url += f"#page={page}"
    return url


def document_for_token(token: str) -> Document | None:
    """The ready document a token names; raises signing.BadSignature (or its
    subclass SignatureExpired) for a forged, altered or stale token."""
    payload = signing.loads(token, salt=SALT, max_age=settings.CITATION_URL_MAX_AGE)
    return (
        Document.objects.ready()
        .filter(pk=payload["d"], channel_id=payload["c"])
        .first()
    )
