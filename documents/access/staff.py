"""Which channels a person may see: curators and readers per channel, superusers all.

Curators (users, or members of curator groups) see and edit a channel and its
documents in the admin, its previews, originals and page images, its feedback
and audit trail, and use it in the playground; readers may use the playground
and grant read access (sign-in). Model permissions still apply on top: a
curator without `documents.change_document` can look but not edit. Superusers
see everything. Every staff view calls these functions, never its own rules.
"""

from django.db.models import Q, QuerySet

from documents.models import Channel

CURATE = "curate"
READ = "read"


def _membership(user, role: str) -> Q:
    users, groups = (
        ("curators", "curator_groups")
        if role == CURATE
        else ("readers", "reader_groups")
    )
    return Q(**{users: user}) | Q(**{f"{groups}__in": user.groups.all()})


def channels_for(user, role: str = CURATE) -> QuerySet[Channel]:
    """The channels `user` may curate (role CURATE) or read (role READ: readers
    and curators alike). Inactive and anonymous users get none."""
    if user is None or not user.is_authenticated or not user.is_active:
        return Channel.objects.none()
    if user.is_superuser:
        return Channel.objects.all()
    condition = _membership(user, CURATE)
    if role == READ:
        condition |= _membership(user, READ)
    ids = Channel.objects.filter(condition).values("pk")
    return Channel.objects.filter(pk__in=ids)


def can_curate(user, channel: Channel) -> bool:
    return channels_for(user, CURATE).filter(pk=channel.pk).exists()


def can_read(user, channel: Channel) -> bool:
    return channels_for(user, READ).filter(pk=channel.pk).exists()


def restrict_to_curated(
    queryset: QuerySet, user, *, channel_field: str | tuple[str, ...]
) -> QuerySet:
    """`queryset` narrowed to rows whose `channel_field` (or any of several) is
    a channel `user` curates (all rows for a superuser)."""
    if user is not None and user.is_active and user.is_superuser:
        return queryset
    curated = channels_for(user, CURATE)
    if isinstance(channel_field, str):
        return queryset.filter(**{f"{channel_field}__in": curated})
    condition = Q()
    for name in channel_field:
        condition |= Q(**{f"{name}__in": curated})
    # A subquery, so a row matching through several channels appears once.
    matching = queryset.model.objects.filter(condition).values("pk")
    return queryset.filter(pk__in=matching)
