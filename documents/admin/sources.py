"""Sources and their syncs: a channel's curators (and superusers) add, change,
delete and sync its sources here; each sync is a read-only row with its counts,
errors by entry and, while it runs, a progress bar. Keys never reach any of
this (there is no REST for sources)."""

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import NON_FIELD_ERRORS, PermissionDenied, ValidationError
from django.db.models import OuterRef, Prefetch, Subquery
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.views.decorators.http import require_POST

from documents.admin.curation import CuratedChannelFilter, CuratedChannelsAdmin, actor
from documents.admin.display import badge, excerpt, short_datetime
from documents.models import Source, SourceSync
from documents.services import sources as source_services
from documents.services.sync import summary
from documents.sources.base import SourceConfigError
from documents.sources.registry import config_for, location_of

Kind = Source.Kind
Status = SourceSync.Status

# Badge tones of a sync's statuses (display.TONES knows "failed").
SYNC_TONES = {
    Status.QUEUED: "pending",
    Status.LISTING: "processing",
    Status.SYNCING: "processing",
    Status.DONE: "ready",
    Status.PARTIAL: "expired",
    Status.FAILED: "failed",
}
RECENT_SYNCS = 10
# How often a running sync's page reloads itself.
REFRESH_SECONDS = 5


def sync_badge(sync: SourceSync) -> str:
    return badge(SYNC_TONES.get(sync.status, sync.status), sync.get_status_display())


def sync_counts(sync: SourceSync) -> str:
    """added 3, revised 1, …: the services' one-line summary, and the kept."""
    kept = f", kept {sync.kept}" if sync.kept else ""
    return summary(sync) + kept


COUNTS = SourceSync.COUNTS


def short_counts(sync: SourceSync) -> str:
    """The counts that are not zero (added 470, failed 10), for lists."""
    shown = [f"{name} {getattr(sync, name)}" for name in COUNTS if getattr(sync, name)]
    return ", ".join(shown) or "-"


def progress(sync: SourceSync) -> str:
    """A progress bar while a sync runs: entries listed so far while listing
    (no end known yet), entries done of those listed while syncing."""
    if sync.status == Status.LISTING:
        return format_html(
            "<progress class='quire-progress' aria-label='Listing'></progress> "
            "{} listed so far",
            sync.listed,
        )
    if sync.status == Status.SYNCING:
        return format_html(
            "<progress class='quire-progress' value='{}' max='{}'></progress> "
            "{} of {} entries",
            sync.processed,
            max(sync.listed, 1),
            sync.processed,
            sync.listed,
        )
    if sync.status == Status.QUEUED:
        return "waiting for a worker"
    return "-"


def duration(sync: SourceSync) -> str:
    if sync.started_at is None:
        return "-"
    if sync.finished_at is None:
        return "running"
    seconds = round((sync.finished_at - sync.started_at).total_seconds())
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {seconds} s"
    return f"{seconds} s"


class SourceForm(forms.ModelForm):
    """The source form: one line of location turned into the kind's
    configuration by the registry, a store picked from those the operator
    declared, and every problem services.sources.check_source finds shown on
    the field it concerns. No path, key or endpoint is ever taken as typed."""

    location = forms.CharField(
        max_length=2048,
        help_text="A folder under the operator's SOURCE_FOLDERS, bucket/prefix, "
        "or a start page or sitemap URL of a host the operator allows.",
        widget=forms.TextInput(attrs={"size": 80}),
    )
    store = forms.ChoiceField(
        required=False,
        label="S3 store",
        help_text="Declared by the operator (SOURCE_S3_STORES).",
        error_messages={
            "invalid_choice": "%(value)s is not a store the operator declared in "
            "SOURCE_S3_STORES."
        },
    )
    max_pages = forms.IntegerField(
        required=False,
        min_value=1,
        label="Max pages",
        help_text="Website: at most this many pages (and never more than "
        "SOURCE_WEB_MAX_PAGES).",
    )

    class Meta:
        model = Source
        fields = [
            "name",
            "channel",
            "kind",
            "location",
            "store",
            "max_pages",
            "metadata_map",
            "delete_removed",
            "every_minutes",
            "enabled",
        ]
        help_texts = {
            "metadata_map": 'A JSON object, channel field to source value: {"product":'
            ' "x-product", "year": "path:0"} (path:N is the Nth folder of the '
            "entry's path). Empty: fields take the source's values of the same "
            "name.",
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        stores = sorted(settings.SOURCE_S3_STORES)
        self.fields["store"].choices = [("", "(none)")] + [(n, n) for n in stores]
        if not stores:
            self.fields["store"].help_text = (
                "None declared on this server: the operator sets SOURCE_S3_STORES "
                "to offer S3 buckets."
            )
        source = self.instance
        if source.pk is not None:
            self.initial.setdefault("location", location_of(source.kind, source.config))
            self.initial.setdefault("store", source.config.get("store", ""))
            self.initial.setdefault("max_pages", source.config.get("max_pages"))

    def clean_metadata_map(self):
        mapping = self.cleaned_data.get("metadata_map")
        return {} if mapping is None else mapping

    def clean(self):
        cleaned = super().clean()
        kind = cleaned.get("kind") or self.instance.kind
        stores = settings.SOURCE_S3_STORES
        if kind == Kind.S3 and not cleaned.get("store") and len(stores) != 1:
            self.add_error(
                "store",
                "Pick the store the bucket is in."
                if stores
                else "No S3 store is declared on this server (SOURCE_S3_STORES).",
            )
        return cleaned

    def _post_clean(self):
        super()._post_clean()
        source = self.instance
        if self.errors or not source.kind:
            return
        options = {}
        if source.kind == Kind.S3:
            options["store"] = self.cleaned_data.get("store") or ""
        if source.kind == Kind.WEB:
            options["max_pages"] = self.cleaned_data.get("max_pages")
        try:
            source.config = config_for(
                source.kind, self.cleaned_data.get("location", ""), **options
            )
            source_services.check_source(source)
        except SourceConfigError as exc:
            self.add_error("location", exc.reason)
        except ValidationError as exc:
            self._show(exc)

    def _show(self, error: ValidationError) -> None:
        """check_source's errors on the fields they concern ("config" is the
        location and what goes with it)."""
        for name, problems in error.error_dict.items():
            field = "location" if name == "config" else name
            if field not in self.fields:
                field = NON_FIELD_ERRORS
            self.add_error(
                None if field == NON_FIELD_ERRORS else field,
                ValidationError(problems),
            )


class CuratedSourceFilter(CuratedChannelFilter):
    """The channel filter, for rows that reach their channel through a source."""

    parameter_name = "source__channel__id__exact"
    field_path = "source__channel"


@admin.register(Source)
class SourceAdmin(CuratedChannelsAdmin):
    form = SourceForm
    list_display = [
        "name",
        "channel",
        "location",
        "enabled",
        "schedule",
        "last_sync",
        "next_sync",
    ]
    list_display_links = ["name"]
    list_filter = ["kind", "enabled", CuratedChannelFilter]
    list_select_related = ["channel"]
    search_fields = ["name"]
    readonly_fields = ["recent_syncs", "created_at", "created_by"]
    change_form_template = "admin/documents/source/change_form.html"

    class Media:
        js = ["documents/admin/source_form.js"]

    def get_fieldsets(self, request, obj=None):
        where = ["name", "channel", "kind", "location"]
        # A new source's form shows the store and page budget for the kinds
        # they belong to (source_form.js); a source's kind is fixed.
        if obj is None or obj.kind == Kind.S3:
            where.append("store")
        if obj is None or obj.kind == Kind.WEB:
            where.append("max_pages")
        fieldsets = [
            (None, {"fields": where}),
            (
                "Sync",
                {
                    "fields": [
                        "metadata_map",
                        "delete_removed",
                        "every_minutes",
                        "enabled",
                    ]
                },
            ),
        ]
        if obj is not None:
            fieldsets.append(
                ("Syncs", {"fields": ["recent_syncs", "created_at", "created_by"]})
            )
        return fieldsets

    def get_readonly_fields(self, request, obj=None):
        # A source's documents are matched by their key in it: the channel and
        # the kind stay what they were added as.
        fixed = ["channel", "kind"] if obj is not None else []
        return [*fixed, *self.readonly_fields]

    def get_queryset(self, request):
        latest = SourceSync.objects.filter(
            pk=Subquery(
                SourceSync.objects.filter(source=OuterRef("source"))
                .order_by("-created_at", "-id")
                .values("pk")[:1]
            )
        )
        return (
            super()
            .get_queryset(request)
            .prefetch_related(Prefetch("syncs", queryset=latest, to_attr="latest"))
        )

    # List columns

    @admin.display(description="Location")
    def location(self, source: Source) -> str:
        return source_services.describe(source)

    @admin.display(description="Every", ordering="every_minutes")
    def schedule(self, source: Source) -> str:
        return f"{source.every_minutes} min" if source.every_minutes else "when asked"

    @admin.display(description="Last sync")
    def last_sync(self, source: Source) -> str:
        sync = next(iter(source.latest), None)
        if sync is None:
            return "never"
        return format_html(
            "<a href='{}'>{}</a> {}<div class='quire-muted quire-wrap'>{}</div>",
            reverse("admin:documents_sourcesync_change", args=[sync.pk]),
            sync_badge(sync),
            short_datetime(sync.finished_at or sync.started_at or sync.created_at),
            short_counts(sync),
        )

    @admin.display(description="Next sync", ordering="next_sync_at")
    def next_sync(self, source: Source) -> str:
        if not source.enabled or not source.every_minutes:
            return "-"
        return short_datetime(source.next_sync_at)

    # Detail fields

    @admin.display(description="Recent syncs")
    def recent_syncs(self, source: Source) -> str:
        syncs = list(source.syncs.all()[:RECENT_SYNCS])
        if not syncs:
            return "None yet."
        return format_html(
            "<table class='quire-table'><thead><tr><th>Sync</th><th>Status</th>"
            "<th>Trigger</th><th>Requested</th><th>Duration</th><th>Counts</th>"
            "</tr></thead><tbody>{}</tbody></table>",
            format_html_join(
                "",
                "<tr><td><a href='{}'>{}</a></td><td>{}</td><td>{}</td><td>{}</td>"
                "<td>{}</td><td>{}</td></tr>",
                (
                    (
                        reverse("admin:documents_sourcesync_change", args=[sync.pk]),
                        sync.pk,
                        sync_badge(sync),
                        sync.get_trigger_display(),
                        short_datetime(sync.created_at),
                        duration(sync),
                        sync_counts(sync),
                    )
                    for sync in syncs
                ),
            ),
        )

    # Permissions and saving through the services

    def has_add_permission(self, request) -> bool:
        return super().has_add_permission(request) and self.curated(request).exists()

    def save_model(self, request, obj, form, change):
        source_services.save_source(source=obj, actor=actor(request))

    def delete_model(self, request, obj):
        source_services.delete_source(source=obj, actor=actor(request))

    def delete_queryset(self, request, queryset):
        for source in queryset.select_related("channel"):
            source_services.delete_source(source=source, actor=actor(request))

    # Sync now

    def get_urls(self):
        prefix = f"{self.opts.app_label}_{self.opts.model_name}"
        return [
            path(
                "<int:object_id>/sync/",
                self.admin_site.admin_view(self.sync_now_view),
                name=f"{prefix}_sync",
            ),
            *super().get_urls(),
        ]

    def sync_now_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        return require_POST(self._sync_now)(request, object_id)

    def _sync_now(self, request: HttpRequest, object_id: int) -> HttpResponse:
        source = get_object_or_404(
            self.get_queryset(request).select_related("channel"), pk=object_id
        )
        if not self.has_change_permission(request, source):
            raise PermissionDenied
        sync, created = source_services.request_sync(
            source=source, actor=actor(request), trigger=SourceSync.Trigger.ADMIN
        )
        if created:
            self.message_user(
                request, f"Queued a sync of “{source}”.", messages.SUCCESS
            )
        else:
            self.message_user(
                request,
                f"A sync of “{source}” is already {sync.get_status_display().lower()}"
                f" (sync {sync.pk}); no other was queued.",
                messages.WARNING,
            )
        return redirect(
            f"admin:{self.opts.app_label}_{self.opts.model_name}_change", source.pk
        )


@admin.register(SourceSync)
class SourceSyncAdmin(CuratedChannelsAdmin):
    """Syncs, as the engine wrote them: nobody adds or changes one by hand; a
    superuser may delete old ones."""

    channel_field = "source__channel"
    list_display = [
        "sync_id",
        "source",
        "status_badge",
        "requested",
        "took",
        "counts",
        "progress_bar",
    ]
    list_display_links = ["sync_id"]
    list_filter = ["status", "trigger", CuratedSourceFilter]
    list_select_related = ["source"]
    list_per_page = 100
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "source_link",
                    "status_badge",
                    "progress_bar",
                    "trigger",
                    "actor",
                    "created_at",
                    "started_at",
                    "finished_at",
                    "took",
                    "attempts",
                ]
            },
        ),
        (
            "Counts",
            {"fields": ["listed", "processed", *SourceSync.COUNTS]},
        ),
        ("Errors", {"fields": ["reason", "errors_table"]}),
    ]
    readonly_fields = [name for _, part in fieldsets for name in part["fields"]]
    change_form_template = "admin/documents/sourcesync/change_form.html"

    @admin.display(description="Sync", ordering="id")
    def sync_id(self, sync: SourceSync) -> int:
        return sync.pk

    @admin.display(description="Source")
    def source_link(self, sync: SourceSync) -> str:
        return format_html(
            "<a href='{}'>{}</a> <span class='quire-muted'>{}</span>",
            reverse("admin:documents_source_change", args=[sync.source_id]),
            sync.source,
            source_services.describe(sync.source),
        )

    @admin.display(description="Status", ordering="status")
    def status_badge(self, sync: SourceSync) -> str:
        return sync_badge(sync)

    @admin.display(description="Requested", ordering="created_at")
    def requested(self, sync: SourceSync) -> str:
        return format_html(
            "{}<div class='quire-muted quire-wrap'>{}, {}</div>",
            short_datetime(sync.created_at),
            sync.get_trigger_display(),
            sync.actor or "-",
        )

    @admin.display(description="Duration")
    def took(self, sync: SourceSync) -> str:
        return duration(sync)

    @admin.display(description="Counts")
    def counts(self, sync: SourceSync) -> str:
        return short_counts(sync)

    @admin.display(description="Progress")
    def progress_bar(self, sync: SourceSync) -> str:
        return progress(sync)

    @admin.display(description="Errors by entry")
    def errors_table(self, sync: SourceSync) -> str:
        errors = sync.errors if isinstance(sync.errors, list) else []
        rows = [e for e in errors if isinstance(e, dict)]
        if not rows:
            return "-"
        shown = format_html(
            "<table class='quire-table'><thead><tr><th>Entry</th><th>Reason</th>"
            "</tr></thead><tbody>{}</tbody></table>",
            format_html_join(
                "",
                "<tr><td>{}</td><td>{}</td></tr>",
                (
                    (excerpt(str(e.get("key", "")), 120), e.get("reason", ""))
                    for e in rows
                ),
            ),
        )
        if sync.failed > len(rows):
            return format_html(
                "{}<p class='quire-muted'>The first {} of {} failed entries "
                "(SOURCE_SYNC_ERRORS_KEPT).</p>",
                shown,
                len(rows),
                sync.failed,
            )
        return shown

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return request.user.is_superuser and super().has_delete_permission(request, obj)

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        # The page reloads itself while the sync runs (templates/admin/
        # documents/sourcesync/change_form.html).
        sync = self.get_object(request, object_id) if object_id else None
        extra_context = {
            **(extra_context or {}),
            "refresh_seconds": REFRESH_SECONDS
            if sync is not None and sync.status in SourceSync.ACTIVE
            else None,
        }
        return super().changeform_view(request, object_id, form_url, extra_context)
