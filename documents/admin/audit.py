"""The audit trail: read-only, filterable, each curator seeing their channels',
told in sentences (documents.access.sentences), a run of identical events on
one row with its count."""

from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.utils.html import format_html

from documents.access.sentences import sentence
from documents.admin.curation import CuratedChannelFilter, CuratedChannelsAdmin
from documents.admin.display import badge, excerpt, short_datetime
from documents.models import AuditEvent


class RepeatsGroupedChangeList(ChangeList):
    """The list after its filters and search, each run of repeats on one row."""

    def get_queryset(self, request, exclude_parameters=None):
        return super().get_queryset(request, exclude_parameters).with_repeats()


@admin.register(AuditEvent)
class AuditEventAdmin(CuratedChannelsAdmin):
    list_title = "Audit trail"
    list_display = [
        "when",
        "what_happened",
        "repeat_count",
        "outcome_badge",
        "detail_excerpt",
        "client_address",
    ]
    list_display_links = ["when"]
    list_select_related = ["user", "api_key", "channel"]
    # An API key's events name its channels rather than one.
    channel_field = ("channel", "channels")
    list_filter = ["action", "outcome", "via", CuratedChannelFilter]
    search_fields = ["actor", "object_repr", "detail", "channel_slug"]
    date_hierarchy = "at"
    list_per_page = 100
    fields = [
        "at",
        "what_happened",
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

    def get_changelist(self, request, **kwargs):
        return RepeatsGroupedChangeList

    @admin.display(description="When", ordering="at")
    def when(self, event: AuditEvent) -> str:
        return short_datetime(event.at)

    @admin.display(description="What happened")
    def what_happened(self, event: AuditEvent) -> str:
        return sentence(event)

    @admin.display(description="Times")
    def repeat_count(self, event: AuditEvent) -> str:
        repeats = getattr(event, "repeats", 1)
        if repeats < 2:
            return ""
        return format_html(
            "<span class='quire-badge quire-badge-quiet' title='{} identical "
            "events this day; the newest is shown'>×{}</span>",
            repeats,
            repeats,
        )

    @admin.display(description="Outcome", ordering="outcome")
    def outcome_badge(self, event: AuditEvent) -> str:
        return badge(event.outcome, event.get_outcome_display())

    @admin.display(description="Detail")
    def detail_excerpt(self, event: AuditEvent) -> str:
        return excerpt(event.detail, 60) if event.detail else ""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # retention (AUDIT_RETENTION_DAYS) prunes it, nothing else
