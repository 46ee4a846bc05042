"""The audit trail: read-only, filterable, each curator seeing their channels'."""

from django.contrib import admin
from django.utils.text import Truncator

from documents.admin.curation import CuratedChannelFilter, CuratedChannelsAdmin
from documents.models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(CuratedChannelsAdmin):
    list_display = [
        "at",
        "action",
        "outcome",
        "actor",
        "via",
        "channel_slug",
        "object_excerpt",
        "client_address",
    ]
    list_filter = ["action", "outcome", "via", CuratedChannelFilter]
    search_fields = ["actor", "object_repr", "detail", "channel_slug"]
    date_hierarchy = "at"
    list_per_page = 100
    fields = [
        "at",
        "action",
        "outcome",
        "actor",
        "via",
        "user",
        "api_key",
        "client_address",
        "channel_slug",
        "object_type",
        "object_id",
        "object_repr",
        "detail",
    ]
    readonly_fields = fields

    @admin.display(description="Object", ordering="object_repr")
    def object_excerpt(self, event: AuditEvent) -> str:
        return Truncator(event.object_repr).chars(60)

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # retention (AUDIT_RETENTION_DAYS) prunes it, nothing else
