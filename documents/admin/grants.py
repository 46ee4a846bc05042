"""Sign-in grants: which client a person let use which channel, with which
scopes and when it was last used; revoked by an action (every token goes)."""

from django.contrib import admin, messages
from django.utils.translation import ngettext

from documents.admin.curation import CuratedChannelFilter, CuratedChannelsAdmin, actor
from documents.admin.display import CredentialColumns
from documents.models import SignInGrant
from documents.services.grants import revoke_sign_in_grant


class GrantStateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return [("active", "Active"), ("revoked", "Revoked")]

    def queryset(self, request, queryset):
        match self.value():
            case "active":
                return queryset.filter(revoked_at__isnull=True)
            case "revoked":
                return queryset.filter(revoked_at__isnull=False)
        return queryset


@admin.register(SignInGrant)
class SignInGrantAdmin(CredentialColumns, CuratedChannelsAdmin):
    list_display = [
        "client",
        "user",
        "channel",
        "scope_list",
        "created",
        "last_used",
        "state_badge",
    ]
    list_filter = [GrantStateFilter, CuratedChannelFilter]
    list_select_related = ["application", "user", "channel"]
    search_fields = ["application__name", "user__username", "channel__slug"]
    actions = ["revoke_selected"]
    fields = [
        "client",
        "client_id",
        "user",
        "channel",
        "resource",
        "scope_list",
        "created_at",
        "last_used_at",
        "revoked_at",
        "state",
    ]
    readonly_fields = fields

    @admin.display(description="Client", ordering="application__name")
    def client(self, grant: SignInGrant) -> str:
        return grant.application.name or grant.application.client_id

    @admin.display(description="Client id")
    def client_id(self, grant: SignInGrant) -> str:
        return grant.application.client_id

    @admin.display(description="State")
    def state(self, grant: SignInGrant) -> str:
        return "revoked" if grant.revoked_at else "active"

    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # revoked, not deleted: the audit trail keeps naming it

    @admin.action(description="Revoke selected sign-in grants", permissions=["change"])
    def revoke_selected(self, request, queryset):
        revoked = sum(
            revoke_sign_in_grant(grant=grant, actor=actor(request))
            for grant in queryset
        )
        self.message_user(
            request,
            ngettext(
                "Revoked %(count)d sign-in grant.",
                "Revoked %(count)d sign-in grants.",
                revoked,
            )
            % {"count": revoked},
            messages.SUCCESS,
        )
