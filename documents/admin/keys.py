"""API keys: created through the keys service, shown once, revoked by an action."""

from django.contrib import admin, messages
from django.db.models import Q
from django.utils import timezone
from django.utils.html import format_html

from documents.forms import ApiKeyForm
from documents.models import ApiKey
from documents.services.keys import create_api_key, revoke_api_key


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
class ApiKeyAdmin(admin.ModelAdmin):
    form = ApiKeyForm
    list_display = [
        "name",
        "key_prefix",
        "channel_list",
        "created_at",
        "last_used_at",
        "expires_at",
        "state",
    ]
    list_filter = [KeyStateFilter, "channels"]
    search_fields = ["name", "prefix"]
    actions = ["revoke_selected"]
    readonly_fields = [
        "key_prefix",
        "created_at",
        "last_used_at",
        "revoked_at",
        "state",
    ]

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("channels")

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["name", "channels", "expires_at"]
        return [
            "name",
            "key_prefix",
            "state",
            "channels",
            "expires_at",
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

    def save_model(self, request, obj, form, change):
        if change:
            super().save_model(request, obj, form, change)
            return
        new = create_api_key(
            name=form.cleaned_data["name"],
            channels=list(form.cleaned_data["channels"]),
            expires_at=form.cleaned_data["expires_at"],
        )
        # The admin goes on with `obj` (history entry, redirect): make it the row
        # the service created.
        for field in ApiKey._meta.concrete_fields:
            setattr(obj, field.attname, getattr(new.api_key, field.attname))
        obj._state.adding = False
        obj._state.db = new.api_key._state.db
        messages.warning(
            request,
            format_html(
                "API key for “{}”: <code class='quire-new-key'>{}</code> "
                "Copy it now: it is shown only this once.",
                new.api_key.name,
                new.raw_key,
            ),
        )

    def save_related(self, request, form, formsets, change):
        if change:  # a new key's channels were set by create_api_key
            super().save_related(request, form, formsets, change)

    @admin.action(description="Revoke selected API keys", permissions=["change"])
    def revoke_selected(self, request, queryset):
        revoked = 0
        for api_key in queryset:
            if api_key.revoked_at is None:
                revoke_api_key(api_key=api_key)
                revoked += 1
        self.message_user(request, f"Revoked {revoked} API key(s).", messages.SUCCESS)
