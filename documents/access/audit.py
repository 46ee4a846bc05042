"""The audit trail: every write and every refused authentication, one row each.

Services call `record` inside the transaction of the write it describes, so a
write and its record commit together or not at all.
"""

import datetime
import time
from collections.abc import Sequence

from django.conf import settings
from django.db import models
from django.utils import timezone

from documents.access.principals import AccessDenied, Actor
from documents.access.windows import Window, count_failure
from documents.models import AuditEvent, Channel

Action = AuditEvent.Action
Outcome = AuditEvent.Outcome
PRUNE_EVERY_SECONDS = 3600.0
_last_prune = 0.0


def record(
    action: str,
    *,
    actor: Actor,
    channel: Channel | None = None,
    target: models.Model | None = None,
    outcome: str = Outcome.OK,
    detail: str = "",
    channels: Sequence[Channel] = (),
) -> AuditEvent:
    """Write one audit row (and, at most hourly per process, drop expired ones).

    `channels` names the channels of an event that concerns several (an API
    key's), so each one's curators see it."""
    slug = channel.slug if channel is not None else ""
    if channel is None and channels:
        slug = ", ".join(sorted(item.slug for item in channels))
    event = AuditEvent.objects.create(
        action=action,
        outcome=outcome,
        actor=actor.label[:300],
        via=actor.via[:16],
        user=actor.user,
        api_key=actor.api_key if actor.api_key and actor.api_key.pk else None,
        client_address=actor.address or None,
        channel=channel if channel is not None and channel.pk else None,
        channel_slug=slug[:64],
        object_type=target._meta.verbose_name[:32] if target is not None else "",
        object_id=str(target.pk) if target is not None and target.pk else "",
        object_repr=str(target)[:300] if target is not None else "",
        detail=detail,
    )
    if channels:
        event.channels.set(channels)
    _prune_now_and_then()
    return event


def record_refusal(
    refusal: AccessDenied, *, actor: Actor, channel: Channel | None, detail: str
) -> None:
    """Audit a refused credential (key or token); a failed authentication (401)
    also counts against the address, and the failure that crosses the limit is
    recorded once more."""
    record(
        Action.AUTH_REFUSED,
        actor=actor,
        channel=channel,
        outcome=Outcome.REFUSED,
        detail=detail,
    )
    if refusal.status == 401 and actor.address:
        count = count_failure(actor.address)
        limit = Window.failures().limit
        if limit and count == limit + 1:
            record(
                Action.AUTH_THROTTLED,
                actor=actor,
                outcome=Outcome.REFUSED,
                detail=f"{count} failed authentications in a minute.",
            )


def prune_audit(*, now: datetime.datetime | None = None) -> int:
    """Delete events older than AUDIT_RETENTION_DAYS (0 keeps everything)."""
    days = settings.AUDIT_RETENTION_DAYS
    if not days:
        return 0
    cutoff = (now or timezone.now()) - datetime.timedelta(days=days)
    # The count of events, not of the channel links deleted with them.
    _, per_model = AuditEvent.objects.filter(at__lt=cutoff).delete()
    return per_model.get(AuditEvent._meta.label, 0)


def _prune_now_and_then() -> None:
    global _last_prune
    if time.monotonic() - _last_prune > PRUNE_EVERY_SECONDS:
        _last_prune = time.monotonic()
        prune_audit()
