"""Signed, expiring links to a document's original file.

A link carries the grant it was made under (the API key, the sign-in grant of
an OAuth token, or the signed-in user of the playground), and works only while
that grant does: revoking or expiring the key or the sign-in, or removing the
user's access to the channel, ends its links at once,
before CITATION_URL_MAX_AGE. With S3 the link still points here; the view
checks the grant, then redirects to a presigned URL that lives a minute.
"""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.core.files.storage import FileSystemStorage, default_storage
from django.urls import reverse
from django.utils import timezone

from documents import access
from documents.models import ApiKey, Document, SignInGrant

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
        {"d": document.pk, "c": document.channel_id},
        api_key=api_key,
        user=user,
        grant=grant,
    )
    url = base_url + reverse("mcp_citation", args=[token])
    if page is not None and document.content_type.lower().startswith("application/pdf"):
        url += f"#page={page}"
    return url


def document_for_token(token: str) -> Document | None:
    """The ready document a token names (None when it is gone); raises as
    open_link does."""
    payload = open_link(token)
    return (
        Document.objects.ready()
        .filter(pk=payload["d"], channel_id=payload["c"])
        .first()
    )


def stored_file_url(document: Document) -> str | None:
    """A short-lived URL of the stored original when the storage serves files
    itself (S3); None when Quire serves them (the filesystem)."""
    if isinstance(default_storage, FileSystemStorage):
        return None
    return default_storage.url(document.file.name, expire=PRESIGNED_SECONDS)
