"""Per-channel staff access in the admin: every list, page and choice shows only
the channels the signed-in user curates (documents.access.staff), on top of
Django's model permissions. Superusers see everything."""

from django.contrib import admin

from documents import access
from documents.access import Actor, Caller


def actor(request) -> Actor:
    """The signed-in staff member, as the audit trail records them."""
    return Caller.for_session(request, via="admin").actor


class CuratedChannelFilter(admin.SimpleListFilter):
    """A channel filter that lists only the channels the user curates."""

    title = "channel"
    parameter_name = "channel__id__exact"
    field_path = "channel"

    def lookups(self, request, model_admin):
        return [
            (str(channel.pk), channel.name)
            for channel in access.channels_for(request.user).order_by("name")
        ]

    def queryset(self, request, queryset):
        if self.value() and self.value().isdigit():
            return queryset.filter(**{f"{self.field_path}__pk": int(self.value())})
        return queryset


class CuratedChannelsFilter(CuratedChannelFilter):
    """The same, for rows with several channels (API keys)."""

    parameter_name = "channels__id__exact"
    field_path = "channels"


class RowPermissions:
    """Django's model permissions, and on top the row's own check: a
    ModelAdmin mixin whose `_allowed(request, obj)` says whether this user may
    see (and so change or delete) `obj`."""

    def _allowed(self, request, obj) -> bool:
        raise NotImplementedError

    def has_view_permission(self, request, obj=None):
        return super().has_view_permission(request, obj) and self._allowed(request, obj)

    def has_change_permission(self, request, obj=None):
        return super().has_change_permission(request, obj) and self._allowed(
            request, obj
        )

    def has_delete_permission(self, request, obj=None):
        return super().has_delete_permission(request, obj) and self._allowed(
            request, obj
        )


class CuratedChannelsAdmin(RowPermissions, admin.ModelAdmin):
    """A ModelAdmin for rows that belong to a channel (`channel_field`)."""

    channel_field = "channel"

    def curated(self, request):
        return access.channels_for(request.user)

    def get_queryset(self, request):
        return access.restrict_to_curated(
            super().get_queryset(request),
            request.user,
            channel_field=self.channel_field,
        )

    def _allowed(self, request, obj) -> bool:
        if obj is None:
            return True
        return self.get_queryset(request).filter(pk=obj.pk).exists()

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "channel":
            kwargs["queryset"] = self.curated(request)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def formfield_for_manytomany(self, db_field, request, **kwargs):
        if db_field.name == "channels":
            kwargs["queryset"] = self.curated(request)
        return super().formfield_for_manytomany(db_field, request, **kwargs)
