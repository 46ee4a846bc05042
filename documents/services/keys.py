"""API keys: created once and shown once, stored as a SHA-256 digest only."""

import secrets
from dataclasses import dataclass
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from documents.access import KEY_PREFIX, Actor, Scope, audit, digest_key
from documents.models import ApiKey, Channel


@dataclass(frozen=True)
class NewApiKey:
    api_key: ApiKey
    raw_key: str  # shown to the administrator once, never stored


def clean_scopes(scopes: list[str] | None) -> list[str]:
    """Scopes in canonical order; "read" is always granted."""
    wanted = set(scopes or []) | {Scope.READ}
    unknown = wanted - set(Scope.values)
    if unknown:
        raise ValidationError(
            f"Unknown scope(s): {', '.join(sorted(unknown))}. "
            f"Scopes: {', '.join(Scope.values)}."
        )
    return [scope for scope in Scope.values if scope in wanted]


def create_api_key(
    *,
    name: str,
    channels: list[Channel],
    actor: Actor,
    expires_at: datetime | None = None,
    scopes: list[str] | None = None,
) -> NewApiKey:
    """Create a key that opens `channels` with `scopes` (read-only unless
    "write" is given); the plain key is only in the return value."""
    raw_key = KEY_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        api_key = ApiKey.objects.create(
            name=name,
            prefix=raw_key[:10],
            digest=digest_key(raw_key),
            expires_at=expires_at,
            scopes=clean_scopes(scopes),
            created_by=actor.user,
        )
        api_key.channels.set(channels)
        audit.record(
            audit.Action.KEY_CREATE,
            actor=actor,
            target=api_key,
            channels=channels,
            detail=_access_detail(api_key, channels)
            + (f"; expires {expires_at:%Y-%m-%d %H:%M} UTC" if expires_at else ""),
        )
    return NewApiKey(api_key=api_key, raw_key=raw_key)


def _access_detail(api_key: ApiKey, channels: list[Channel]) -> str:
    """What a key opens, for the audit trail."""
    slugs = ", ".join(channel.slug for channel in channels) or "none"
    return f"Scopes: {', '.join(api_key.scopes)}; channels: {slugs}"


def update_api_key(
    *,
    api_key: ApiKey,
    actor: Actor,
    name: str,
    channels: list[Channel],
    scopes: list[str],
    expires_at: datetime | None,
) -> ApiKey:
    """Change a key's name, channels, scopes or expiry (the key itself stays)."""
    with transaction.atomic():
        api_key.name = name
        api_key.scopes = clean_scopes(scopes)
        api_key.expires_at = expires_at
        api_key.save(update_fields=["name", "scopes", "expires_at"])
        before = list(api_key.channels.all())
        api_key.channels.set(channels)
        audit.record(
            audit.Action.KEY_CHANGE,
            actor=actor,
            target=api_key,
            # The channels it lost too: their curators see that it left.
            channels=list(
                {channel.pk: channel for channel in [*before, *channels]}.values()
            ),
            detail=_access_detail(api_key, channels),
        )
    return api_key


def revoke_api_key(*, api_key: ApiKey, actor: Actor) -> bool:
    """Revoke the key (it stops working at once, citation links included);
    False when it was revoked already."""
    with transaction.atomic():
        revoked = ApiKey.objects.filter(pk=api_key.pk, revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )
        if revoked:
            api_key.refresh_from_db(fields=["revoked_at"])
            audit.record(
                audit.Action.KEY_REVOKE,
                actor=actor,
                target=api_key,
                channels=list(api_key.channels.all()),
            )
    return bool(revoked)
