"""Channel writes."""

from django.db import transaction
from django.db.models import F

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
    **options,
) -> Channel:
    """Create a channel and its metadata fields (dicts of MetadataField attributes)."""
    with transaction.atomic():
        channel = Channel(slug=slug, name=name, description=description, **options)
        channel.full_clean()
        channel.save()
        for position, spec in enumerate(fields or []):
            field = MetadataField(channel=channel, position=position, **spec)
            field.full_clean()
            field.save()
    return channel
