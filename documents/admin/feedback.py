"""Feedback from MCP clients: read-only for the channel's curators."""

from django.contrib import admin
from django.utils.text import Truncator

from documents.admin.curation import CuratedChannelFilter, CuratedChannelsAdmin
from documents.models import Feedback


@admin.register(Feedback)
class FeedbackAdmin(CuratedChannelsAdmin):
    list_display = [
        "created_at",
        "channel",
        "score",
        "query_excerpt",
        "comment_excerpt",
    ]
    list_filter = [CuratedChannelFilter, "score"]
    list_select_related = ["channel", "api_key"]
    search_fields = ["query", "answer", "comment"]
    fields = ["channel", "api_key", "score", "query", "answer", "comment", "created_at"]
    readonly_fields = fields

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="Query")
    def query_excerpt(self, feedback: Feedback) -> str:
        return Truncator(feedback.query).chars(80)

    @admin.display(description="Comment")
    def comment_excerpt(self, feedback: Feedback) -> str:
        return Truncator(feedback.comment).chars(80)
