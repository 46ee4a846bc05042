"""Channel writes."""

from django.db import transaction
from django.db.models import F

from documents.access import Actor, audit
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
    actor: Actor | None = None,
    **options,
) -> Channel:
    """Create a channel and its metadata fields (dicts of MetadataField attributes);
    recorded in the audit trail when an actor is given."""
    with transaction.atomic():
        channel = Channel(slug=slug, name=name, description=description, **options)
        channel.full_clean()
        channel.save()
        for position, spec in enumerate(fields or []):
            field = MetadataField(channel=channel, position=position, **spec)
            field.full_clean()
            field.save()
        if actor is not None:
            audit.record(
                audit.Action.CHANNEL_CREATE,
                actor=actor,
                channel=channel,
                target=channel,
            )
    return channel


def record_channel_change(*, channel: Channel, actor: Actor, changes: str) -> None:
    """Note a configuration change made through the admin's channel form (which
    saves the channel and its field rows itself) and invalidate what depends on
    the configuration (tool schemas, cached answers)."""
    with transaction.atomic():
        bump_corpus_version(channel_id=channel.pk)
        audit.record(
            audit.Action.CHANNEL_CHANGE,
            actor=actor,
            channel=channel,
            target=channel,
            detail=changes,
        )
