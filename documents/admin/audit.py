"""The audit trail: read-only, filterable, each curator seeing their channels'."""

from django.contrib import admin
from django.utils.html import format_html

from documents.admin.curation import CuratedChannelFilter, CuratedChannelsAdmin
from documents.admin.display import badge, excerpt, short_datetime
from documents.models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(CuratedChannelsAdmin):
    list_display = [
        "when",
        "action",
        "outcome_badge",
        "actor_and_door",
        "channel_slug",
        "object_excerpt",
        "client_address",
    ]
    list_display_links = ["when"]
    # An API key's events name its channels rather than one.
    channel_field = ("channel", "channels")
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

    @admin.display(description="When", ordering="at")
    def when(self, event: AuditEvent) -> str:
        return short_datetime(event.at)

    @admin.display(description="Outcome", ordering="outcome")
    def outcome_badge(self, event: AuditEvent) -> str:
        return badge(event.outcome, event.get_outcome_display())

    @admin.display(description="Actor", ordering="actor")
    def actor_and_door(self, event: AuditEvent) -> str:
        return format_html(
            "{} <span class='quire-muted'>via {}</span>", event.actor, event.via
        )

    @admin.display(description="Object", ordering="object_repr")
    def object_excerpt(self, event: AuditEvent) -> str:
        return excerpt(event.object_repr, 50)

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # retention (AUDIT_RETENTION_DAYS) prunes it, nothing else
