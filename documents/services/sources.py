"""A channel's sources: adding, changing and deleting them, and asking for
syncs (now, or when a source's schedule says so).

The admin, `manage.py add_source` / `sync_source` and the worker's schedule
call these functions, so every door checks a source's configuration against
the operator's settings, audits the change and queues syncs the same way. Who
may call them (superusers and the channel's curators; never an API key) is
decided by the callers' permission checks, documents.access.
"""

from datetime import timedelta
from functools import partial

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from documents import locks
from documents.access import Actor, audit
from documents.models import Channel, MetadataField, Source, SourceSync
from documents.services.sync import PATH_PREFIX
from documents.source_tasks import sync_source_task
from documents.sources.base import SourceError
from documents.sources.registry import build_source, location_of

Trigger = SourceSync.Trigger


def check_source(source: Source) -> None:
    """Every problem of a source's settings, as one ValidationError: the
    configuration must be one the operator allows (build_source makes no
    request), the mapping must name the channel's fields, the schedule must
    not be shorter than SOURCE_MIN_EVERY_MINUTES."""
    errors: dict[str, list[str]] = {}
    try:
        with build_source(source.kind, source.config):
            pass
    except SourceError as exc:
        errors.setdefault("config", []).append(exc.reason)
    mapping = source.metadata_map
    if not isinstance(mapping, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()
    ):
        errors.setdefault("metadata_map", []).append(
            "The mapping is a JSON object of channel field to source name, like "
            '{"product": "x-product", "year": "path:0"}.'
        )
    else:
        names = set(
            MetadataField.objects.filter(channel=source.channel_id).values_list(
                "name", flat=True
            )
        )
        for field_name, value in mapping.items():
            if field_name not in names:
                errors.setdefault("metadata_map", []).append(
                    f"{field_name!r} is not a metadata field of this channel."
                )
            if (
                value.startswith(PATH_PREFIX)
                and not value.removeprefix(PATH_PREFIX).isdigit()
            ):
                errors.setdefault("metadata_map", []).append(
                    f"{value!r}: a path segment is path: and a number (path:0)."
                )
    if (
        source.every_minutes is not None
        and source.every_minutes < settings.SOURCE_MIN_EVERY_MINUTES
    ):
        errors.setdefault("every_minutes", []).append(
            f"A source syncs at most every {settings.SOURCE_MIN_EVERY_MINUTES} "
            "minutes (SOURCE_MIN_EVERY_MINUTES)."
        )
    if errors:
        raise ValidationError(errors)


def describe(source: Source) -> str:
    """The source as one line: kind, location and, for a bucket, its store."""
    line = f"{source.get_kind_display()} {location_of(source.kind, source.config)}"
    store = source.config.get("store") if isinstance(source.config, dict) else None
    return f"{line} in {store}" if store else line


def save_source(*, source: Source, actor: Actor) -> Source:
    """Check and save a new or changed source (audited as source.add or
    source.change); a schedule starts from now."""
    check_source(source)
    adding = source.pk is None
    with transaction.atomic():
        if source.every_minutes and source.enabled:
            source.next_sync_at = timezone.now() + timedelta(
                minutes=source.every_minutes
            )
        else:
            source.next_sync_at = None
        if adding and source.created_by is None:
            source.created_by = actor.user
        source.save()
        audit.record(
            audit.Action.SOURCE_ADD if adding else audit.Action.SOURCE_CHANGE,
            actor=actor,
            channel=source.channel,
            target=source,
            detail=describe(source),
        )
    return source


def delete_source(*, source: Source, actor: Actor) -> None:
    """Delete the source and its sync history; its documents stay in the
    channel, as uploads."""
    with transaction.atomic():
        audit.record(
            audit.Action.SOURCE_DELETE,
            actor=actor,
            channel=source.channel,
            target=source,
            detail=describe(source),
        )
        source.delete()


def request_sync(
    *, source: Source, actor: Actor, trigger: str, enqueue: bool = True
) -> tuple[SourceSync, bool]:
    """Queue a sync of `source`; (its row, True), or (the queued or running
    one, False): one sync per source at a time. Without `enqueue` the caller
    runs it (services.sync.run_sync), as manage.py sync_source does."""
    with transaction.atomic():
        locks.xact_lock(locks.Namespace.SOURCE_SYNC_QUEUE, source.pk)
        active = source.syncs.filter(status__in=SourceSync.ACTIVE).first()
        if active is not None:
            return active, False
        sync = SourceSync.objects.create(
            source=source,
            trigger=trigger,
            requested_by=actor.user,
            actor=actor.label[:300],
        )
        if enqueue:
            transaction.on_commit(
                partial(sync_source_task.enqueue, sync.pk), robust=True
            )
    return sync, True


def enqueue_due_syncs(now=None) -> list[SourceSync]:
    """Queue a sync of every enabled source whose schedule is due, and move
    its next time on; several workers may call it at once (a due source is
    taken by one of them)."""
    now = now or timezone.now()
    queued = []
    due = Q(enabled=True, every_minutes__isnull=False, next_sync_at__lte=now)
    while True:
        with transaction.atomic():
            source = (
                Source.objects.select_for_update(skip_locked=True)
                .filter(due)
                .select_related("channel")
                .order_by("next_sync_at")
                .first()
            )
            if source is None:
                return queued
            Source.objects.filter(pk=source.pk).update(
                next_sync_at=now + timedelta(minutes=source.every_minutes)
            )
            sync, created = request_sync(
                source=source, actor=SCHEDULE, trigger=Trigger.SCHEDULE
            )
            if created:
                queued.append(sync)


SCHEDULE = Actor(via="schedule")


def channel_source(channel: Channel, name: str | None) -> list[Source]:
    """The channel's sources named `name` (all of them for None)."""
    sources = Source.objects.filter(channel=channel).select_related("channel")
    return list(sources.filter(name=name) if name else sources)
