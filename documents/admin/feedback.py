"""Feedback from MCP clients: read-only for the channel's curators."""

from django.contrib import admin

from documents.admin.curation import CuratedChannelFilter, CuratedChannelsAdmin
from documents.admin.display import excerpt, short_datetime
from documents.models import Feedback


@admin.register(Feedback)
class FeedbackAdmin(CuratedChannelsAdmin):
    list_display = [
        "sent",
        "channel",
        "score_out_of_5",
        "query_excerpt",
        "comment_excerpt",
    ]
    list_display_links = ["sent"]
    list_filter = [CuratedChannelFilter, "score"]
    list_select_related = ["channel", "api_key"]
    search_fields = ["query", "answer", "comment"]
    fields = ["channel", "api_key", "score", "query", "answer", "comment", "created_at"]
    readonly_fields = fields

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="Sent", ordering="created_at")
    def sent(self, feedback: Feedback) -> str:
        return short_datetime(feedback.created_at)

    @admin.display(description="Score", ordering="score")
    def score_out_of_5(self, feedback: Feedback) -> str:
        return f"{feedback.score} / 5"

    @admin.display(description="Query")
    def query_excerpt(self, feedback: Feedback) -> str:
        return excerpt(feedback.query, 80)

    @admin.display(description="Comment")
    def comment_excerpt(self, feedback: Feedback) -> str:
        return excerpt(feedback.comment, 80)
