"""Channels, edited with their metadata fields inline."""

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Count, Q
from django.forms.models import BaseInlineFormSet
from django.urls import reverse
from django.utils.html import format_html
from django.utils.http import urlencode

from documents.models import Channel, Document, MetadataField
from documents.services.channels import bump_corpus_version


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
        "enable_in_mcp_retrieve_chunks",
    ]
    formfield_overrides = {
        models.TextField: {"widget": forms.Textarea(attrs={"rows": 2, "cols": 40})}
    }


@admin.register(Channel)
class ChannelAdmin(admin.ModelAdmin):
    inlines = [MetadataFieldInline]
    list_display = [
        "name",
        "slug",
        "mcp_path",
        "document_total",
        "ready_total",
        "retriever_mode",
        "generator_kind",
    ]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    readonly_fields = ["mcp_path", "corpus_version", "created_at", "updated_at"]
    fieldsets = [
        (None, {"fields": ["name", "slug", "description", "mcp_path"]}),
        (
            "Retriever",
            {
                "fields": [
                    "retriever_mode",
                    "retriever_candidates",
                    "retriever_top_k",
                    "retriever_rrf_k",
                ]
            },
        ),
        (
            "Generator (rag_search)",
            {
                "fields": [
                    "generator_kind",
                    "generator_base_url",
                    "generator_model",
                    "generator_api_key_env",
                    "generator_temperature",
                    "generator_timeout",
                ]
            },
        ),
        (
            "MCP",
            {
                "fields": [
                    "mcp_instructions",
                    "newest_sort",
                    "filterable_fields",
                    "max_pages_per_call",
                    "tool_list_documents",
                    "tool_get_pages",
                    "tool_get_citation_url",
                    "tool_retrieve_text_chunks",
                    "tool_rag_search",
                    "tool_submit_feedback",
                ]
            },
        ),
        (
            "State",
            {
                "fields": ["corpus_version", "created_at", "updated_at"],
                "classes": ["collapse"],
            },
        ),
    ]

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
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

    @admin.display(description="MCP endpoint")
    def mcp_path(self, channel: Channel) -> str:
        return f"/mcp/{channel.slug}" if channel.slug else "-"

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        if change:
            # Field definitions feed the MCP schemas and cached answers.
            bump_corpus_version(channel_id=form.instance.pk)
