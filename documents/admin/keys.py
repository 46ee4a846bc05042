"""API keys: created through the keys service, shown once, revoked by an action.

Staff who aren't superusers see the keys whose channels they all curate, and
give keys only their own channels.
"""

from django.contrib import admin, messages
from django.db.models import Q
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.translation import ngettext

from documents import access
from documents.admin.curation import CuratedChannelsFilter, RowPermissions, actor
from documents.admin.display import CredentialColumns, short_datetime
from documents.forms import ApiKeyForm
from documents.models import ApiKey, Channel
from documents.services.connect import client_configurations
from documents.services.keys import create_api_key, revoke_api_key, update_api_key


class KeyStateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return [("active", "Active"), ("revoked", "Revoked"), ("expired", "Expired")]

    def queryset(self, request, queryset):
        now = timezone.now()
        match self.value():
            case "active":
                return queryset.filter(revoked_at__isnull=True).filter(
                    Q(expires_at__isnull=True) | Q(expires_at__gt=now)
                )
            case "revoked":
                return queryset.filter(revoked_at__isnull=False)
            case "expired":
                return queryset.filter(revoked_at__isnull=True, expires_at__lte=now)
        return queryset


@admin.register(ApiKey)
class ApiKeyAdmin(RowPermissions, CredentialColumns, admin.ModelAdmin):
    form = ApiKeyForm
    list_display = [
        "name",
        "key_prefix",
        "channel_list",
        "scope_list",
        "created",
        "last_used",
        "expires",
        "state_badge",
    ]
    list_filter = [KeyStateFilter, CuratedChannelsFilter]
    search_fields = ["name", "prefix"]
    actions = ["revoke_selected"]
    readonly_fields = [
        "key_prefix",
        "scope_list",
        "created_by",
        "created_at",
        "last_used_at",
        "revoked_at",
        "state",
    ]

    def get_queryset(self, request):
        keys = super().get_queryset(request).prefetch_related("channels")
        if request.user.is_superuser:
            return keys
        # Keys that open any channel the user doesn't curate stay hidden.
        foreign = Channel.objects.exclude(
            pk__in=access.channels_for(request.user).values("pk")
        )
        return (
            keys.exclude(channels__in=foreign)
            .filter(Q(channels__isnull=False) | Q(created_by=request.user))
            .distinct()
        )

    def _allowed(self, request, obj) -> bool:
        return obj is None or self.get_queryset(request).filter(pk=obj.pk).exists()

    def has_delete_permission(self, request, obj=None):
        # Keys are revoked, never deleted: the audit trail keeps naming them.
        return False

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        form.base_fields["channels"].queryset = access.channels_for(request.user)
        return form

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["name", "channels", "write", "expires_at"]
        return [
            "name",
            "key_prefix",
            "state",
            "channels",
            "write",
            "expires_at",
            "created_by",
            "created_at",
            "last_used_at",
            "revoked_at",
        ]

    @admin.display(description="Key")
    def key_prefix(self, api_key: ApiKey) -> str:
        return f"{api_key.prefix}…"

    @admin.display(description="Channels")
    def channel_list(self, api_key: ApiKey) -> str:
        # Reads the prefetched channels: one query for the whole page.
        return ", ".join(channel.slug for channel in api_key.channels.all())

    @admin.display(description="State")
    def state(self, api_key: ApiKey) -> str:
        if api_key.revoked_at is not None:
            return "revoked"
        if api_key.expires_at is not None and api_key.expires_at <= timezone.now():
            return "expired"
        return "active"

    @admin.display(description="Expires", ordering="expires_at")
    def expires(self, api_key: ApiKey) -> str:
        return short_datetime(api_key.expires_at, with_time=False)

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        if change:
            update_api_key(
                api_key=obj,
                actor=actor(request),
                name=data["name"],
                channels=list(data["channels"]),
                scopes=form.scopes(),
                expires_at=data["expires_at"],
            )
            return
        new = create_api_key(
            name=data["name"],
            channels=list(data["channels"]),
            expires_at=data["expires_at"],
            scopes=form.scopes(),
            actor=actor(request),
        )
        # The admin goes on with `obj` (history entry, redirect): make it the row
        # the service created.
        for field in ApiKey._meta.concrete_fields:
            setattr(obj, field.attname, getattr(new.api_key, field.attname))
        obj._state.adding = False
        obj._state.db = new.api_key._state.db
        # Messages live in the session (settings.MESSAGE_STORAGE): the key never
        # travels in a cookie, and is gone once shown.
        configurations = [
            (
                channel,
                client_configurations(
                    mcp_url=request.build_absolute_uri(channel.mcp_path),
                    key=new.raw_key,
                    server_name=f"quire-{channel.slug}",
                ),
            )
            for channel in new.api_key.channels.order_by("name")
        ]
        messages.warning(
            request,
            render_to_string(
                "admin/documents/apikey/created.html",
                {
                    "name": new.api_key.name,
                    "key": new.raw_key,
                    "configurations": configurations,
                },
            ),
        )

    def save_related(self, request, form, formsets, change):
        pass  # the keys service set the channels

    @admin.action(description="Revoke selected API keys", permissions=["change"])
    def revoke_selected(self, request, queryset):
        revoked = sum(
            revoke_api_key(api_key=api_key, actor=actor(request))
            for api_key in queryset
        )
        self.message_user(
            request,
            ngettext(
                "Revoked %(count)d API key.", "Revoked %(count)d API keys.", revoked
            )
            % {"count": revoked},
            messages.SUCCESS,
        )
