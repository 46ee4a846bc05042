"""Channels, edited with their metadata fields inline."""

from dataclasses import dataclass

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Count, Q
from django.forms.models import BaseInlineFormSet
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.html import format_html
from django.utils.http import urlencode
from django.utils.text import capfirst

from documents import access
from documents.admin.curation import RowPermissions, actor
from documents.admin.widgets import (
    SORT_ROWS,
    FilterableFieldsField,
    NewestSortField,
)
from documents.models import Channel, Chunk, Document, MetadataField
from documents.services.channels import record_channel_change
from documents.services.documents import delete_channel
from documents.tool_switches import switch_catalogue


class MetadataFieldFormSet(BaseInlineFormSet):
    """Checks the channel's newest_sort and filterable_fields against the field
    rows being saved with it (the channel form alone cannot see them)."""

    def clean(self):
        super().clean()
        fields = {
            form.cleaned_data["name"]: form.cleaned_data
            for form in self.forms
            if form.cleaned_data.get("name") and not form.cleaned_data.get("DELETE")
        }
        channel = self.instance
        errors = []
        sort = channel.newest_sort if isinstance(channel.newest_sort, list) else []
        for item in sort:
            name = item.get("field") if isinstance(item, dict) else None
            if name not in fields:
                errors.append(f"newest_sort names {name!r}, which is not a field here.")
        listed = channel.filterable_fields
        for name in listed if isinstance(listed, list) else []:
            if name not in fields:
                errors.append(
                    f"filterable_fields names {name!r}, which is not a field here."
                )
            elif not fields[name].get("filterable"):
                errors.append(
                    f"filterable_fields names {name!r}: mark that field filterable."
                )
        if errors:
            raise ValidationError(errors)


class MetadataFieldInline(admin.TabularInline):
    model = MetadataField
    formset = MetadataFieldFormSet
    extra = 0
    fields = [
        "position",
        "name",
        "type",
        "description",
        "required",
        "filterable",
        "sent_with_chunks",
    ]
    formfield_overrides = {
        models.TextField: {"widget": forms.Textarea(attrs={"rows": 2, "cols": 30})}
    }


class ChannelForm(forms.ModelForm):
    """The channel form; the chat-model endpoint is chosen from those the
    operator declared (CHAT_MODEL_ENDPOINTS), never typed in."""

    class Meta:
        model = Channel
        exclude: list[str] = []  # the admin's fieldsets decide

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._offer_own_fields()
        self._offer_tool_switches()
        if "generator_endpoint" in self.fields:
            endpoints = sorted(settings.CHAT_MODEL_ENDPOINTS)
            self.fields["generator_endpoint"] = forms.ChoiceField(
                choices=[("", "(none)")] + [(name, name) for name in endpoints],
                required=False,
                label="Chat-model endpoint",
                help_text="The chat models this server's operator made available."
                if endpoints
                else "This server offers no chat model: its operator can add one.",
            )
        self._help_in_words()

    def _help_in_words(self) -> None:
        """Help that says what a setting does and its limit as a number (the
        model's texts name the settings that hold the limits)."""
        texts = {
            "retriever_top_k": "How many passages a search returns when the "
            f"client asks for no number (it may ask for up to "
            f"{settings.MCP_MAX_RESULTS}).",
            "generator_timeout": "How long the chat model may take to answer, "
            f"at most {settings.CHAT_MODEL_TIMEOUT:g} seconds.",
            "max_pages_per_call": "Most pages one get_pages call returns, at "
            f"most {settings.MCP_MAX_PAGES_PER_CALL}.",
            "retriever_candidates": "How many passages the keyword search and "
            "the meaning search each bring before their lists are merged.",
            "retriever_rrf_k": "How the two lists are merged: smaller favours "
            "passages both searches rank near the top.",
        }
        for name, text in texts.items():
            if name in self.fields:
                self.fields[name].help_text = text

    def _offer_tool_switches(self) -> None:
        """One checkbox per switch the registered tools bring (switch_catalogue),
        ticked as the channel has it."""
        if "tool_switches" not in self.fields:
            return
        switches = list(switch_catalogue)
        model_field = Channel._meta.get_field("tool_switches")
        self.fields["tool_switches"] = forms.MultipleChoiceField(
            choices=[(switch.name, switch.label) for switch in switches],
            widget=forms.CheckboxSelectMultiple,
            required=False,
            label=capfirst(model_field.verbose_name),
            help_text=model_field.help_text,
        )
        self.initial["tool_switches"] = [
            switch.name for switch in switches if self.instance.tool_switched_on(switch)
        ]

    def clean_tool_switches(self) -> dict[str, bool]:
        """The ticked names as {switch: on} for every offered switch; choices of
        switches no tool offers now are kept as they were."""
        ticked = set(self.cleaned_data["tool_switches"])
        kept = self.instance.tool_switches
        chosen = dict(kept) if isinstance(kept, dict) else {}
        for switch in switch_catalogue:
            chosen[switch.name] = switch.name in ticked
        return chosen

    def _offer_own_fields(self) -> None:
        """newest_sort and filterable_fields choose among the channel's fields
        (the model fields keep their JSON and their validation)."""
        fields = list(self.instance.metadata_fields.all()) if self.instance.pk else []
        sort = self.instance.newest_sort
        for name, field in [
            (
                "newest_sort",
                NewestSortField(
                    field_names=[field.name for field in fields],
                    rows=max(SORT_ROWS, len(sort) if isinstance(sort, list) else 0),
                ),
            ),
            (
                "filterable_fields",
                FilterableFieldsField(
                    field_names=[field.name for field in fields if field.filterable]
                ),
            ),
        ]:
            if name in self.fields:
                model_field = Channel._meta.get_field(name)
                field.label = capfirst(model_field.verbose_name)
                field.help_text = model_field.help_text
                self.fields[name] = field


ACCESS_FIELDS = ["curators", "curator_groups", "readers", "reader_groups"]
WHO_MAY_SEE_IT = "Who may see it"


@dataclass(frozen=True)
class NextStep:
    label: str
    url: str
    why: str


def next_steps(channel: Channel) -> list[NextStep]:
    """What a curator does with a channel that holds nothing yet, with links."""
    upload = reverse("admin:documents_document_upload")
    source = reverse("admin:documents_source_add")
    key = reverse("admin:documents_apikey_add")
    playground = reverse("playground:index")
    return [
        NextStep(
            "Upload documents",
            f"{upload}?{urlencode({'channel': channel.pk})}",
            "PDFs, Word, PowerPoint, Excel, EPUB, HTML, Markdown, text or scans.",
        ),
        NextStep(
            "Add a source",
            f"{source}?{urlencode({'channel': channel.pk})}",
            "A folder, a bucket or a website kept in sync.",
        ),
        NextStep(
            "Create an API key",
            f"{key}?{urlencode({'channels': channel.pk})}",
            "For an MCP client or a script to use this channel.",
        ),
        NextStep(
            "Open the playground",
            f"{playground}?{urlencode({'channel': channel.slug})}",
            "Try the channel's tools as an MCP client would.",
        ),
    ]


def access_changes(form) -> list[str]:
    """Who was added to or removed from the channel's readers and curators
    (users and groups), as the audit trail tells it."""
    described = []
    for name in ACCESS_FIELDS:
        if name not in form.changed_data:
            continue
        before = {str(item) for item in form.initial.get(name) or []}
        after = {str(item) for item in form.cleaned_data.get(name) or []}
        label = capfirst(Channel._meta.get_field(name).verbose_name)
        for verb, names in (("added", after - before), ("removed", before - after)):
            if names:
                described.append(f"{label}: {verb} {', '.join(sorted(names))}")
    return described


@admin.register(Channel)
class ChannelAdmin(RowPermissions, admin.ModelAdmin):
    form = ChannelForm
    inlines = [MetadataFieldInline]
    filter_horizontal = ACCESS_FIELDS
    list_display = [
        "name",
        "mcp_path",
        "document_total",
        "ready_total",
        "search_mode",
        "answers",
    ]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    readonly_fields = [
        "mcp_path",
        "access_summary",
        "corpus_version",
        "created_at",
        "updated_at",
    ]
    change_form_template = "admin/documents/channel/change_form.html"

    def get_fieldsets(self, request, obj=None):
        """In the order of the work: what it is, who may see it, (its metadata
        fields, placed by the template), what MCP clients get, and the search
        and answer settings most channels keep, folded away."""
        access = (
            {
                "fields": ACCESS_FIELDS,
                # Four pickers, folded: the metadata fields stay near the top.
                "classes": ["collapse"],
                "description": "Curators see and edit this channel and its "
                "documents; readers may use it in the playground and sign in "
                "to it from an MCP client. Only superusers change this.",
            }
            if request.user.is_superuser
            else {"fields": ["access_summary"]}
        )
        search = [
            "retriever_mode",
            "retriever_candidates",
            "retriever_top_k",
            "retriever_rrf_k",
        ]
        if settings.CHAT_MODEL_ENDPOINTS:
            # Chat answers need a chat model the operator declared.
            search += [
                "generator_kind",
                "generator_endpoint",
                "generator_model",
                "generator_temperature",
                "generator_timeout",
            ]
        fieldsets = [
            (None, {"fields": ["name", "slug", "description", "mcp_path"]}),
            (WHO_MAY_SEE_IT, access),
            (
                "Tools and discovery",
                {
                    "fields": [
                        "tool_switches",
                        "mcp_instructions",
                        "newest_sort",
                        "filterable_fields",
                        "max_pages_per_call",
                        "listed",
                    ]
                },
            ),
            (
                "Search and answers (advanced)",
                {
                    "fields": search,
                    "classes": ["collapse"],
                    "description": "The defaults suit most collections: change "
                    "them when searches miss what they should find.",
                },
            ),
        ]
        if obj is not None:
            fieldsets.append(
                (
                    "State",
                    {
                        "fields": ["corpus_version", "created_at", "updated_at"],
                        "classes": ["collapse"],
                    },
                )
            )
        return fieldsets

    @admin.display(description="Curators and readers")
    def access_summary(self, channel: Channel) -> str:
        if channel.pk is None:
            return "You curate it; a superuser can add curators and readers."
        parts = []
        for name in ACCESS_FIELDS:
            names = [str(item) for item in getattr(channel, name).all()]
            if names:
                label = capfirst(Channel._meta.get_field(name).verbose_name)
                parts.append(f"{label}: {', '.join(names)}")
        return "; ".join(parts) or "Only superusers (and you, its curator)."

    def render_change_form(
        self, request, context, add=False, change=False, form_url="", obj=None
    ):
        context["inlines_after"] = WHO_MAY_SEE_IT
        if obj is not None and obj.pk and not obj.documents.exists():
            context["next_steps"] = next_steps(obj)
        return super().render_change_form(request, context, add, change, form_url, obj)

    def response_add(self, request, obj, post_url_continue=None):
        """A new channel opens on its own page, which says what comes next."""
        if "_addanother" in request.POST or "_popup" in request.POST:
            return super().response_add(request, obj, post_url_continue)
        self.message_user(request, f"Created the channel “{obj}”.", messages.SUCCESS)
        return redirect(reverse("admin:documents_channel_change", args=[obj.pk]))

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .filter(pk__in=access.channels_for(request.user).values("pk"))
            .annotate(
                document_total=Count("documents"),
                ready_total=Count(
                    "documents", filter=Q(documents__status=Document.Status.READY)
                ),
            )
        )

    @admin.display(description="Documents", ordering="document_total")
    def document_total(self, channel: Channel) -> str:
        url = reverse("admin:documents_document_changelist")
        query = urlencode({"channel__id__exact": channel.pk})
        return format_html("<a href='{}?{}'>{}</a>", url, query, channel.document_total)

    @admin.display(description="Ready", ordering="ready_total")
    def ready_total(self, channel: Channel) -> int:
        return channel.ready_total

    @admin.display(description="MCP path")
    def mcp_path(self, channel: Channel) -> str:
        return channel.mcp_path if channel.slug else "-"

    @admin.display(description="Search", ordering="retriever_mode")
    def search_mode(self, channel: Channel) -> str:
        return channel.retriever_mode  # hybrid, keyword or vector

    @admin.display(description="Answers", ordering="generator_kind")
    def answers(self, channel: Channel) -> str:
        if channel.generator_kind == Channel.GeneratorKind.CHAT:
            return f"{channel.generator_model} ({channel.generator_endpoint})"
        return "extractive"

    def _allowed(self, request, obj) -> bool:
        return obj is None or access.can_curate(request.user, obj)

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if not change and not request.user.is_superuser:
            obj.curators.add(request.user)  # the creator keeps sight of it

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        # Field definitions feed the MCP schemas and cached answers.
        changed = sorted(
            (set(form.changed_data) - set(ACCESS_FIELDS))
            | {
                f"field {row.cleaned_data.get('name', '?')}"
                for formset in formsets
                for row in formset.forms
                if row.has_changed()
            }
        )
        record_channel_change(
            channel=form.instance,
            actor=actor(request),
            changes=("Created: " if not change else "Changed: ")
            + (", ".join(changed) or "nothing"),
            created=not change,
            access_changes=access_changes(form),
        )

    def get_deleted_objects(self, objs, request):
        # Counts rather than every page and chunk on the confirmation page.
        channels = list(objs)
        ids = [channel.pk for channel in channels]
        counts = {
            "channels": len(channels),
            "documents": Document.objects.filter(channel_id__in=ids).count(),
            "chunks": Chunk.objects.filter(channel_id__in=ids).count(),
        }
        perms_needed = set() if self.has_delete_permission(request) else {"channel"}
        return [str(channel) for channel in channels], counts, perms_needed, []

    def delete_model(self, request, obj):
        delete_channel(channel=obj, actor=actor(request))

    def delete_queryset(self, request, queryset):
        for channel in queryset:
            delete_channel(channel=channel, actor=actor(request))
