"""API keys: created once and shown once, stored as a SHA-256 digest only."""

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime

from asgiref.sync import sync_to_async
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from documents.models import ApiKey, Channel

KEY_PREFIX = "qk_"


def digest_key(raw_key: str) -> str:
    return hashlib.sha256(raw_key.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class NewApiKey:
    api_key: ApiKey
    raw_key: str  # shown to the administrator once, never stored


def create_api_key(
    *,
    name: str,
    channels: list[Channel],
    expires_at: datetime | None = None,
) -> NewApiKey:
    """Create a key that opens `channels`; the plain key is only in the return value."""
    raw_key = KEY_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        api_key = ApiKey.objects.create(
            name=name,
            prefix=raw_key[:10],
            digest=digest_key(raw_key),
            expires_at=expires_at,
        )
        api_key.channels.set(channels)
    return NewApiKey(api_key=api_key, raw_key=raw_key)


def revoke_api_key(*, api_key: ApiKey) -> None:
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at"])


class KeyRejected(Exception):
    """Missing, unknown, revoked or expired key (401), or not for the channel (403)."""

    def __init__(self, message: str, *, status: int):
        super().__init__(message)
        self.status = status


def authenticate_api_key(raw_key: str | None, *, channel: Channel | None) -> ApiKey:
    """The active key for raw_key that opens channel, or KeyRejected.

    With channel=None only the key itself is checked: callers use that to answer
    an unknown channel with 404 only to a valid key, so that channel names can't
    be probed without one.
    """
    digest = digest_key(require_key(raw_key))
    keys = ApiKey.objects.filter(digest=digest)
    if channel is not None:
        # Whether the key opens the channel comes with the key: one round trip.
        keys = keys.annotate(
            opens_channel=Exists(
                ApiKey.channels.through.objects.filter(
                    apikey_id=OuterRef("pk"), channel_id=channel.pk
                )
            )
        )
    api_key = keys.first()
    check_key(
        api_key,
        digest,
        channel=channel,
        opens_channel=bool(api_key and channel and api_key.opens_channel),
    )
    return api_key


def require_key(raw_key: str | None) -> str:
    if not raw_key:
        raise KeyRejected("An API key is required.", status=401)
    return raw_key


def check_key(
    api_key: ApiKey | None,
    digest: str,
    *,
    channel: Channel | None,
    opens_channel: bool,
) -> None:
    """Raise KeyRejected unless api_key (looked up by digest) is active and, when
    a channel is given, opens it; then note the use."""
    # The lookup is by digest (an index hit); compare again in constant time so
    # the outcome never depends on how much of a guessed key matched.
    if api_key is None or not hmac.compare_digest(api_key.digest, digest):
        raise KeyRejected("Unknown API key.", status=401)
    now = timezone.now()
    if api_key.revoked_at is not None:
        raise KeyRejected("This API key has been revoked.", status=401)
    if api_key.expires_at is not None and api_key.expires_at <= now:
        raise KeyRejected("This API key has expired.", status=401)
    if channel is not None and not opens_channel:
        raise KeyRejected("This API key does not open this channel.", status=403)
    # Record use at most once a minute per key, to keep hot paths free of writes.
    if (
        api_key.last_used_at is None
        or (now - api_key.last_used_at).total_seconds() > 60
    ):
        ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)


aauthenticate_api_key = sync_to_async(authenticate_api_key)
