"""Locked-out sign-ins: the admin sign-ins django-axes refuses after repeated
wrong passwords (AXES_FAILURE_LIMIT for one user name from one address), as an
operator reads them, with an action that lets the person try again at once
instead of waiting out AXES_COOLOFF_MINUTES."""

from axes.models import AccessAttempt
from axes.utils import reset
from django.conf import settings
from django.contrib import admin, messages
from django.utils.translation import ngettext

from documents.admin.display import badge, short_datetime


class LockedOutSignInAdmin(admin.ModelAdmin):
    list_title = "Locked-out sign-ins"
    change_list_template = "admin/lockouts/change_list.html"
    list_display = [
        "username",
        "address",
        "failures",
        "last_try",
        "state_badge",
    ]
    list_display_links = None
    search_fields = ["username", "ip_address"]
    actions = ["unlock_selected"]

    @admin.display(description="User name", ordering="username")
    def username(self, attempt: AccessAttempt) -> str:
        return attempt.username or "-"

    @admin.display(description="From address", ordering="ip_address")
    def address(self, attempt: AccessAttempt) -> str:
        return attempt.ip_address or "-"

    @admin.display(description="Wrong passwords", ordering="failures_since_start")
    def failures(self, attempt: AccessAttempt) -> int:
        return attempt.failures_since_start

    @admin.display(description="Last try", ordering="attempt_time")
    def last_try(self, attempt: AccessAttempt) -> str:
        return short_datetime(attempt.attempt_time)

    @admin.display(description="State")
    def state_badge(self, attempt: AccessAttempt) -> str:
        if attempt.failures_since_start >= settings.AXES_FAILURE_LIMIT:
            return badge("refused", "locked out")
        return badge("pending", "still allowed")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    @admin.action(description="Unlock selected sign-ins", permissions=["delete"])
    def unlock_selected(self, request, queryset):
        pairs = set(queryset.values_list("username", "ip_address"))
        for username, address in pairs:
            reset(username=username, ip=address)
        self.message_user(
            request,
            ngettext(
                "Unlocked %(count)d sign-in: it may try again now.",
                "Unlocked %(count)d sign-ins: they may try again now.",
                len(pairs),
            )
            % {"count": len(pairs)},
            messages.SUCCESS,
        )
