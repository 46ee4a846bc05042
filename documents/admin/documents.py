"""Documents: the upload form, status and counts, title and metadata, page
preview, re-ingest, a new file (revision) and the revision history, where a
synced document comes from, delete."""

import mimetypes

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode
from django.utils.translation import ngettext
from django.views.decorators.http import require_POST

from documents import revisions
from documents.admin.curation import CuratedChannelFilter, CuratedChannelsAdmin, actor
from documents.admin.display import (
    badge,
    excerpt,
    human_size,
    metadata_list,
    short_datetime,
)
from documents.forms import (
    DocumentMetadataForm,
    ReplaceFileForm,
    UploadChannelForm,
    UploadDocumentsForm,
)
from documents.ingestion.formats import label_of
from documents.models import Chunk, Document, DocumentRevision, Page
from documents.originals import original_response
from documents.pageview import PageHeader, back_url, render_page_html
from documents.results import public_url
from documents.services import documents as document_services
from documents.services.revisions import replace_document_file


def _served(revision: DocumentRevision, document: Document) -> str:
    if revision.served_at is not None:
        return short_datetime(revision.served_at)
    if revision.failure:
        return f"never: could not be read ({excerpt(revision.failure, 80)})"
    if revision.number > document.revision:
        return "waiting to be read"
    return "never (a newer file came first)"


@admin.register(Document)
class DocumentAdmin(CuratedChannelsAdmin):
    list_display = [
        "id",
        "display_title",
        "channel",
        "status_badge",
        "reason",
        "page_count",
        "chunk_count",
        "size_display",
        "added",
    ]
    list_display_links = ["id", "display_title"]
    list_filter = ["status", CuratedChannelFilter]
    list_select_related = ["channel"]
    list_per_page = 100
    search_fields = ["title", "original_filename"]
    actions = ["reingest_selected"]
    # The document page: what was stored, then how its ingestion went (the
    # fields of that part that apply, see get_fieldsets). Nothing is edited here.
    detail_fields = [
        "channel",
        "title",
        "original_link",
        "content_type",
        "size_detail",
        "sha256",
        "format_detail",
        "revision_detail",
        "metadata_fields",
        "added_by",
        "created_at",
        "updated_at",
    ]
    ingestion_fields = [
        "status_badge",
        "status_reason",
        "has_text",
        "page_count",
        "chunk_count",
        "page_links",
        "ingested_at",
    ]
    # A synced document's provenance (documents.services.sync).
    source_fields = ["source_link", "source_key", "source_url_link", "last_sync"]
    readonly_fields = [
        *detail_fields,
        *ingestion_fields,
        *source_fields,
        "revision_history",
    ]

    def get_fieldsets(self, request, obj=None):
        ingestion = ["status_badge"]
        if obj is not None and obj.status_reason:
            ingestion.append("status_reason")
        if obj is not None and (obj.page_count or obj.status == Document.Status.READY):
            # Only pages that were read have text, chunks and previews.
            ingestion += ["has_text", "page_count", "chunk_count", "page_links"]
        if obj is not None and obj.ingested_at:
            ingestion.append("ingested_at")
        fieldsets = [
            (None, {"fields": self.detail_fields}),
            ("Ingestion", {"fields": ingestion}),
        ]
        if obj is not None and obj.source_id is not None:
            fieldsets.append(("Source", {"fields": self.source_fields}))
        fieldsets.append(("Revisions", {"fields": ["revision_history"]}))
        return fieldsets

    # List columns

    @admin.display(description="Title", ordering="title")
    def display_title(self, document: Document) -> str:
        # The file beside the title: a DOCX and a PPTX of one paper share one.
        return format_html(
            "{}<div class='quire-muted quire-wrap quire-file'>{} · {}</div>",
            excerpt(str(document), 70),
            excerpt(document.original_filename, 50),
            label_of(document.content_type),
        )

    @admin.display(description="Status", ordering="status")
    def status_badge(self, document: Document) -> str:
        # data-status: the list refreshes itself while any row is waiting
        # (documents/admin/refresh_list.js).
        return format_html(
            "<span data-status='{}'>{}</span>",
            document.status,
            badge(document.status, document.get_status_display()),
        )

    @admin.display(description="Reason")
    def reason(self, document: Document) -> str:
        # The whole reason is on the document's page (and on hover).
        return excerpt(document.status_reason, 60) if document.status_reason else ""

    @admin.display(description="Size", ordering="size")
    def size_display(self, document: Document) -> str:
        return human_size(document.size)

    @admin.display(description="Added", ordering="created_at")
    def added(self, document: Document) -> str:
        return short_datetime(document.created_at, with_time=False)

    # Detail fields

    @admin.display(description="Size")
    def size_detail(self, document: Document) -> str:
        size = human_size(document.size)
        return size if document.size < 1024 else f"{size} ({document.size:,} bytes)"

    @admin.display(description="Added by")
    def added_by(self, document: Document) -> str:
        if document.created_by_key_id is not None:
            key = document.created_by_key
            return f"API key {key.prefix}… ({key.name})"
        if document.created_by_id is not None:
            return f"{document.created_by.get_username()} (admin)"
        return "command line or demo loader"

    @admin.display(description="Revision")
    def revision_detail(self, document: Document) -> str:
        return format_html(
            "{}, since {}", document.revision, short_datetime(document.revised_at)
        )

    @admin.display(description="History")
    def revision_history(self, document: Document) -> str:
        rows = revisions.history(document)
        if not rows:
            return "-"
        return format_html(
            "<table class='quire-revisions'><thead><tr><th>Revision</th>"
            "<th>Given</th><th>By</th><th>File</th><th>Size</th><th>SHA-256</th>"
            "<th>Served from</th><th>Original</th></tr></thead><tbody>{}</tbody>"
            "</table>",
            format_html_join(
                "",
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                "<td title='{}'>{}…</td><td>{}</td><td>{}</td></tr>",
                (
                    (
                        f"{row.number} (current)"
                        if row.number == document.revision
                        else row.number,
                        short_datetime(row.created_at),
                        row.actor or "-",
                        row.original_filename,
                        human_size(row.size),
                        row.sha256,
                        row.sha256[:12],
                        _served(row, document),
                        "kept" if row.file else "dropped (retention)",
                    )
                    for row in rows
                ),
            ),
        )

    @admin.display(description="Source")
    def source_link(self, document: Document) -> str:
        source = document.source
        if source is None:
            return "-"
        url = reverse("admin:documents_source_change", args=[source.pk])
        return format_html("<a href='{}'>{}</a>", url, source)

    @admin.display(description="Source URL")
    def source_url_link(self, document: Document) -> str:
        # Only a web address is a link (the one rule every door uses).
        url = public_url(document.source_url)
        if url is None:
            return document.source_url or "-"
        return format_html("<a href='{}' rel='noreferrer noopener'>{}</a>", url, url)

    @admin.display(description="Last sync")
    def last_sync(self, document: Document) -> str:
        sync = document.source_sync
        if sync is None:
            return "-"
        url = reverse("admin:documents_sourcesync_change", args=[sync.pk])
        when = sync.finished_at or sync.started_at or sync.created_at
        return format_html(
            "<a href='{}'>sync {}</a> {}", url, sync.pk, short_datetime(when)
        )

    @admin.display(description="Metadata")
    def metadata_fields(self, document: Document) -> str:
        fields = list(document.channel.metadata_fields.order_by("position", "id"))
        return metadata_list(document.metadata, fields)

    @admin.display(description="Format")
    def format_detail(self, document: Document) -> str:
        return label_of(document.content_type)

    @admin.display(description="File")
    def original_link(self, document: Document) -> str:
        if not document.file:
            return "-"
        url = reverse(self._url_name("original"), args=[document.pk])
        return format_html("<a href='{}'>{}</a>", url, document.original_filename)

    @admin.display(description="Page previews")
    def page_links(self, document: Document) -> str:
        pages = document.pages.order_by("number").values_list(
            "number", "has_text", "ocr"
        )
        if not pages:
            return "-"
        links = format_html_join(
            " ",
            "<a href='{}' title='{}' class='{}'>{}{}</a>",
            (
                (
                    reverse(self._url_name("page"), args=[document.pk, number]),
                    "read by OCR"
                    if ocr
                    else ("" if has_text else "image only, no text"),
                    "quire-ocr" if ocr else "",
                    number,
                    " (OCR)" if ocr else "",
                )
                for number, has_text, ocr in pages
            ),
        )
        read_by_ocr = sum(1 for _, _, ocr in pages if ocr)
        if not read_by_ocr:
            return links
        return format_html(
            "{}<div class='quire-muted quire-wrap'>{}</div>",
            links,
            ngettext(
                "%(count)d page was read by OCR: its text may hold misread words.",
                "%(count)d pages were read by OCR: their text may hold misread words.",
                read_by_ocr,
            )
            % {"count": read_by_ocr},
        )

    # Permissions and the built-in views

    def has_add_permission(self, request) -> bool:
        return super().has_add_permission(request) and self.curated(request).exists()

    def add_view(self, request, form_url="", extra_context=None):
        return redirect(self._url_name("upload"))

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        extra_context = {
            **(extra_context or {}),
            "show_save": False,
            "show_save_and_continue": False,
            "show_save_and_add_another": False,
        }
        return super().changeform_view(request, object_id, form_url, extra_context)

    def get_deleted_objects(self, objs, request):
        # Django would list every page and chunk on the confirmation page;
        # counts say the same for documents with thousands of chunks.
        documents = list(objs)
        ids = [document.pk for document in documents]
        counts = {
            "documents": len(documents),
            "pages": Page.objects.filter(document_id__in=ids).count(),
            "chunks": Chunk.objects.filter(document_id__in=ids).count(),
        }
        perms_needed = set() if self.has_delete_permission(request) else {"document"}
        return [str(document) for document in documents], counts, perms_needed, []

    def delete_model(self, request, obj):
        document_services.delete_document(document=obj, actor=actor(request))

    def delete_queryset(self, request, queryset):
        for document in queryset:
            document_services.delete_document(document=document, actor=actor(request))

    # Actions

    @admin.action(description="Re-ingest selected documents", permissions=["change"])
    def reingest_selected(self, request, queryset):
        for document in queryset:
            document_services.reingest_document(document=document, actor=actor(request))
        self.message_user(
            request,
            ngettext(
                "Queued %(count)d document for ingestion.",
                "Queued %(count)d documents for ingestion.",
                len(queryset),
            )
            % {"count": len(queryset)},
            messages.SUCCESS,
        )

    # Extra views

    def _url_name(self, view: str) -> str:
        return f"admin:{self.opts.app_label}_{self.opts.model_name}_{view}"

    def get_urls(self):
        prefix = f"{self.opts.app_label}_{self.opts.model_name}"
        wrap = self.admin_site.admin_view
        return [
            path("upload/", wrap(self.upload_view), name=f"{prefix}_upload"),
            path(
                "<int:object_id>/reingest/",
                wrap(self.reingest_view),
                name=f"{prefix}_reingest",
            ),
            path(
                "<int:object_id>/replace/",
                wrap(self.replace_view),
                name=f"{prefix}_replace",
            ),
            path(
                "<int:object_id>/metadata/",
                wrap(self.metadata_view),
                name=f"{prefix}_metadata",
            ),
            path(
                "<int:object_id>/original/",
                wrap(self.original_view),
                name=f"{prefix}_original",
            ),
            path(
                "<int:object_id>/pages/<int:number>/",
                wrap(self.page_view),
                name=f"{prefix}_page",
            ),
            path(
                "<int:object_id>/pages/<int:number>/image/",
                wrap(self.page_image_view),
                name=f"{prefix}_page_image",
            ),
            *super().get_urls(),
        ]

    def upload_view(self, request: HttpRequest) -> HttpResponse:
        """Step one picks the channel; step two takes the files and the values of
        that channel's metadata fields. Files are queued, never ingested here."""
        if not super().has_add_permission(request):
            raise PermissionDenied
        channel_form = UploadChannelForm(
            request.GET or None, channels=self.curated(request)
        )
        if not channel_form.is_valid():
            return self._render_upload(request, channel_form=channel_form)
        channel = channel_form.cleaned_data["channel"]
        if request.method != "POST":
            form = UploadDocumentsForm(channel=channel)
            return self._render_upload(request, channel=channel, form=form)
        form = UploadDocumentsForm(request.POST, request.FILES, channel=channel)
        if not form.is_valid():
            return self._render_upload(request, channel=channel, form=form)
        queued, rejected, duplicates = [], [], []
        for upload in form.cleaned_data["files"]:
            try:
                document_services.create_document(
                    channel=channel,
                    file=upload,
                    filename=upload.name,
                    metadata=form.cleaned_data["metadata"],
                    content_type=upload.content_type,
                    actor=actor(request),
                )
            except document_services.DuplicateDocument as exc:
                duplicates.append(exc.messages[0])
            except ValidationError as exc:
                rejected.append(f"{upload.name}: {' '.join(exc.messages)}")
            else:
                queued.append(upload.name)
        if not queued and not duplicates:
            for problem in rejected:
                form.add_error("files", problem)
            return self._render_upload(request, channel=channel, form=form)
        if queued:
            self.message_user(
                request,
                ngettext(
                    "Queued %(count)d document for ingestion into “%(channel)s”.",
                    "Queued %(count)d documents for ingestion into “%(channel)s”.",
                    len(queued),
                )
                % {"count": len(queued), "channel": channel},
                messages.SUCCESS,
            )
        for duplicate in duplicates:
            self.message_user(request, f"Not added: {duplicate}", messages.WARNING)
        for problem in rejected:
            self.message_user(request, f"Not uploaded: {problem}", messages.ERROR)
        changelist = reverse(self._url_name("changelist"))
        return redirect(f"{changelist}?{urlencode({'channel__id__exact': channel.pk})}")

    def _render_upload(self, request, *, channel_form=None, channel=None, form=None):
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"Upload documents to {channel}"
            if channel
            else "Upload documents",
            "channel_form": channel_form,
            "channel": channel,
            "form": form,
        }
        return TemplateResponse(
            request, "admin/documents/document/upload.html", context
        )

    def metadata_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        """Edit a document's title and the values of its channel's metadata
        fields, validated as at upload."""
        document = self._document_or_404(request, object_id)
        if not self.has_change_permission(request, document):
            raise PermissionDenied
        if request.method == "POST":
            form = DocumentMetadataForm(request.POST, document=document)
            if form.is_valid():
                try:
                    document_services.update_document(
                        document=document,
                        title=form.cleaned_data["title"],
                        metadata=form.cleaned_data["metadata"],
                        actor=actor(request),
                    )
                except ValidationError as exc:
                    form.add_error(None, exc)
                else:
                    self.message_user(request, f"Saved “{document}”.", messages.SUCCESS)
                    return redirect(self._url_name("change"), document.pk)
        else:
            form = DocumentMetadataForm(document=document)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"Title and metadata of {document}",
            "original": document,
            "form": form,
        }
        return TemplateResponse(
            request, "admin/documents/document/metadata.html", context
        )

    def replace_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        """Give the document a new file, its next revision (who may re-ingest
        it may)."""
        document = self._document_or_404(request, object_id)
        if not self.has_change_permission(request, document):
            raise PermissionDenied
        form = ReplaceFileForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                revision, created = replace_document_file(
                    document=document,
                    file=upload,
                    filename=upload.name,
                    content_type=upload.content_type,
                    actor=actor(request),
                )
            except ValidationError as exc:
                form.add_error("file", exc)
            else:
                if created:
                    message = (
                        f"Queued revision {revision.number} of “{document}”; "
                        f"revision {document.revision} is served until it is read."
                    )
                    self.message_user(request, message, messages.SUCCESS)
                else:
                    message = (
                        f"{upload.name} is already revision {revision.number} of "
                        f"“{document}”; nothing changed."
                    )
                    self.message_user(request, message, messages.WARNING)
                return redirect(self._url_name("change"), document.pk)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"Replace the file of {document}",
            "original": document,
            "form": form,
        }
        return TemplateResponse(
            request, "admin/documents/document/replace.html", context
        )

    def _document_or_404(self, request, object_id: int) -> Document:
        # Only documents of channels the user curates exist here.
        document = get_object_or_404(
            self.get_queryset(request).select_related("channel"), pk=object_id
        )
        if not self.has_view_permission(request, document):
            raise PermissionDenied
        return document

    def reingest_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        return require_POST(self._reingest)(request, object_id)

    def _reingest(self, request: HttpRequest, object_id: int) -> HttpResponse:
        document = self._document_or_404(request, object_id)
        if not self.has_change_permission(request, document):
            raise PermissionDenied
        document_services.reingest_document(document=document, actor=actor(request))
        self.message_user(
            request, f"Queued “{document}” for ingestion.", messages.SUCCESS
        )
        return redirect(self._url_name("change"), document.pk)

    def original_view(self, request: HttpRequest, object_id: int) -> FileResponse:
        document = self._document_or_404(request, object_id)
        if not document.file:
            raise Http404("This document has no stored file.")
        return original_response(document)

    def page_view(self, request: HttpRequest, object_id: int, number: int):
        """A page as the document looks (documents.pageview), under the same
        header as the citation page."""
        document = self._document_or_404(request, object_id)
        page = get_object_or_404(Page, document=document, number=number)
        change_url = reverse(self._url_name("change"), args=[document.pk])

        def page_url(other: int) -> str:
            if not 1 <= other <= document.page_count:
                return ""
            return reverse(self._url_name("page"), args=[document.pk, other])

        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"{document} — page {number} of {document.page_count}",
            "document": document,
            "page": page,
            "header": PageHeader.for_page(
                document,
                number,
                original_url=reverse(self._url_name("original"), args=[document.pk]),
                # Paging through the preview, back still means the document.
                back_url=back_url(
                    request,
                    fallback=change_url,
                    unless_under=page_url(1).removesuffix("1/"),
                ),
                previous_url=page_url(number - 1),
                next_url=page_url(number + 1),
            ),
            "number": number,
            "image_url": (
                reverse(self._url_name("page_image"), args=[document.pk, number])
                if page.image
                else ""
            ),
            "page_html": render_page_html(page, content_type=document.content_type),
            # A curator checks what was read: the text beside the image, open.
            "text_open": True,
        }
        return TemplateResponse(
            request, "admin/documents/document/page_preview.html", context
        )

    def page_image_view(self, request: HttpRequest, object_id: int, number: int):
        document = self._document_or_404(request, object_id)
        page = get_object_or_404(Page, document=document, number=number)
        if not page.image:
            raise Http404("This page has no image.")
        content_type = mimetypes.guess_type(page.image.name)[0] or "image/png"
        if not content_type.startswith("image/"):
            content_type = "application/octet-stream"
        # Page images are small: one read keeps the ASGI handler from iterating
        # a file synchronously.
        with page.image.open("rb") as handle:
            response = HttpResponse(handle.read(), content_type=content_type)
        response["Cache-Control"] = "private, max-age=3600"
        return response
