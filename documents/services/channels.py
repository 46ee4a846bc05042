"""Channel writes."""

from django.db import transaction
from django.db.models import F

from documents.access import COMMAND_LINE, Actor, audit
from documents.models import Channel, MetadataField


def bump_corpus_version(*, channel_id: int) -> None:
    """Invalidate every cache keyed on the channel's corpus (answers, schemas)."""
    Channel.objects.filter(pk=channel_id).update(corpus_version=F("corpus_version") + 1)


def create_channel(
    *,
    slug: str,
    name: str,
    description: str = "",
    fields: list[dict] | None = None,
    actor: Actor = COMMAND_LINE,
    **options,
) -> Channel:
    """Create a channel and its metadata fields (dicts of MetadataField
    attributes), recorded in the audit trail as channel.create (by the command
    line unless another actor is given: code that runs with no door does)."""
    names = [str(spec.get("name", "?")) for spec in fields or []]
    with transaction.atomic():
        channel = Channel(slug=slug, name=name, description=description, **options)
        channel.full_clean()
        channel.save()
        for position, spec in enumerate(fields or []):
            field = MetadataField(channel=channel, position=position, **spec)
            field.full_clean()
            field.save()
        audit.record(
            audit.Action.CHANNEL_CREATE,
            actor=actor,
            channel=channel,
            target=channel,
            detail=f"Fields: {', '.join(names) or 'none'}",
        )
    return channel


def record_channel_change(
    *,
    channel: Channel,
    actor: Actor,
    changes: str,
    created: bool = False,
    access_changes: list[str] | None = None,
) -> None:
    """Note a channel created or changed through the admin's channel form
    (which saves the channel and its field rows itself) and invalidate what
    depends on the configuration (tool schemas, cached answers). Changes to its
    readers and curators (`access_changes`, each "readers: added alice") are
    an event of their own, so the trail says who let whom in."""
    with transaction.atomic():
        bump_corpus_version(channel_id=channel.pk)
        audit.record(
            audit.Action.CHANNEL_CREATE if created else audit.Action.CHANNEL_CHANGE,
            actor=actor,
            channel=channel,
            target=channel,
            detail=changes,
        )
        if access_changes:
            audit.record(
                audit.Action.CHANNEL_ACCESS,
                actor=actor,
                channel=channel,
                target=channel,
                detail="; ".join(access_changes),
            )
