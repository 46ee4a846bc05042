"""Document writes: upload, edits, queueing re-ingestion and deletion (of one
document, or of a channel with all of its documents).

The admin, the API, the `ingest` command and the demo all call these
functions, so every path validates and stores documents the same way. The
ingestion itself, which the worker runs, is services/ingestion.py.
"""

import logging
from functools import partial
from pathlib import PureWindowsPath

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files import File
from django.db import transaction
from django.template.defaultfilters import filesizeformat
from django.utils import timezone

from documents import locks, revisions
from documents.access import Actor, audit
from documents.ingestion import formats
from documents.ingestion.files import delete_files, page_image_names, sha256_of
from documents.ingestion.titles import file_title
from documents.limits import clip
from documents.metadata import clean_metadata
from documents.models import Channel, Document
from documents.search import indexing
from documents.services.channels import bump_corpus_version
from documents.services.ingestion import metadata_title
from documents.services.queue import enqueue_ingestion

logger = logging.getLogger(__name__)

Status = Document.Status


class DuplicateDocument(ValidationError):
    """The file is already in the channel (same SHA-256); `existing` is the
    document that holds it. A ValidationError, so every caller that reports
    refused files reports this one by name too."""

    def __init__(self, *, name: str, existing: Document):
        self.existing = existing
        super().__init__(
            f"{name} is already in this channel as “{existing.title}” "
            f"(document {existing.pk}); it was not added again.",
            code="duplicate",
        )


def create_document(
    *,
    channel: Channel,
    file,
    actor: Actor,
    filename: str | None = None,
    title: str = "",
    metadata: dict | None = None,
    content_type: str | None = None,
    enqueue: bool = True,
    provenance: dict | None = None,
) -> Document:
    """Validate and store an uploaded file as a pending document of `channel`.

    `file` is a Django File (an upload, or File(open(path, "rb"))). The content
    type (taken from the upload when not given) is compared ignoring case and
    parameters; when it says nothing ("application/octet-stream") the file
    name's extension decides. The size must not exceed settings.UPLOAD_MAX_BYTES
    and the metadata must fit the channel's fields. Every problem is reported at
    once as a ValidationError a person can read.

    A file whose SHA-256 is already in the channel is not stored again: that
    raises DuplicateDocument naming the existing document (re-ingest that one
    to read it again).

    The title is `title` if given, else the metadata's "title" value (when the
    channel has such a field), else the file name without its extension until
    ingestion finds a better one. With `enqueue` (the default)
    ingest_document_task is queued when the transaction commits; pass False to
    ingest synchronously with services.ingestion.ingest_document(). The upload
    is recorded in the audit trail as `actor`'s. A sync passes the document's
    `provenance` (its Source fields: source, source_key, ...), saved with it.
    """
    if not isinstance(file, File):
        file = File(file)
    name, canonical_type, size, errors = check_file(file, filename, content_type)
    fields = list(channel.metadata_fields.all())
    try:
        cleaned = clean_metadata(fields, metadata)
    except ValidationError as exc:
        errors.extend(exc.messages)
        cleaned = {}
    if errors:
        raise ValidationError(errors)

    document = Document(
        channel=channel,
        title=clip(
            title.strip() or metadata_title(fields, cleaned) or file_title(name),
            Document,
            "title",
        ),
        original_filename=clip(name, Document, "original_filename"),
        content_type=canonical_type,
        size=size,
        sha256=sha256_of(file),
        metadata=cleaned,
        status=Status.PENDING,
        created_by=actor.user,
        created_by_key=actor.api_key,
        **(provenance or {}),
    )
    with transaction.atomic():
        # Uploads of one file at the same moment queue here, so one of them wins.
        locks.xact_lock(
            locks.Namespace.UPLOAD_CONTENT, f"{channel.pk}:{document.sha256}"
        )
        existing = (
            Document.objects.filter(channel=channel, sha256=document.sha256)
            .order_by("pk")
            .first()
        )
        if existing is not None:
            raise DuplicateDocument(name=name, existing=existing)
        try:
            document.file.save(name, file, save=False)
        except OSError as exc:
            raise storing_failed(name, exc) from exc
        try:
            document.save()
            revisions.record_first_revision(document=document, actor=actor)
            audit.record(
                audit.Action.DOCUMENT_UPLOAD,
                actor=actor,
                channel=channel,
                target=document,
                detail=f"{name}, {filesizeformat(size)}",
            )
        except BaseException:
            document.file.delete(save=False)
            raise
        if enqueue:
            transaction.on_commit(partial(enqueue_ingestion, document.pk), robust=True)
    return document


def check_file(
    file: File, filename: str | None, content_type: str | None
) -> tuple[str, str, int, list[str]]:
    """(name, canonical content type, size, problems) of an uploaded file, for
    create_document and replace_document_file: the same formats and size limit
    for a new document and a new revision."""
    # Windows paths split on both separators, so "..\\x.txt" loses its path too.
    name = PureWindowsPath(filename or file.name or "").name
    errors: list[str] = []
    if not name:
        errors.append("The file needs a name.")
    if content_type is None:
        content_type = getattr(file, "content_type", None)
    try:
        canonical_type = formats.resolve_content_type(content_type, name, file)
    except formats.Refused as refused:
        errors.append(f"{name or 'The file'}: {refused.reason}")
        canonical_type = ""
    else:
        if canonical_type is None:
            errors.append(
                f"{name or 'The file'}: unsupported file type "
                f"({content_type or 'unknown'}). Quire reads "
                f"{formats.labels()} files."
            )
    size = file.size or 0
    if size > settings.UPLOAD_MAX_BYTES:
        errors.append(
            f"{name or 'The file'} is {filesizeformat(size)}; the upload limit is "
            f"{filesizeformat(settings.UPLOAD_MAX_BYTES)}."
        )
    return name, canonical_type, size, errors


def storing_failed(name: str, exc: OSError) -> ValidationError:
    """The error a person reads when the storage refused the file (logged with
    its traceback), for create_document and replace_document_file."""
    logger.exception("Storing %s failed", name)
    return ValidationError(
        f"{name} could not be stored ({exc.strerror or exc}); nothing was "
        "saved. Try again later, or ask an administrator."
    )


def update_document(
    *, document: Document, title: str, metadata: dict | None, actor: Actor
) -> Document:
    """Change a document's title and metadata.

    The metadata must fit the channel's fields (ValidationError with a message
    per problem, and nothing changes). Filters, listings and citations use the
    new values at once; the channel's corpus version is bumped so that cached
    answers and tool schemas (enums of the values in use) follow. The pages and
    chunks are not touched: their text does not depend on either.
    """
    fields = list(document.channel.metadata_fields.all())
    cleaned = clean_metadata(fields, metadata)
    title = clip(
        title.strip()
        or metadata_title(fields, cleaned)
        or file_title(document.original_filename),
        Document,
        "title",
    )
    with transaction.atomic():
        Document.objects.filter(pk=document.pk).update(
            title=title, metadata=cleaned, updated_at=timezone.now()
        )
        bump_corpus_version(channel_id=document.channel_id)
        document.title, document.metadata = title, cleaned
        audit.record(
            audit.Action.DOCUMENT_EDIT,
            actor=actor,
            channel=document.channel,
            target=document,
        )
    return document


def reingest_document(*, document: Document, actor: Actor) -> None:
    """Queue the document for ingestion again (after a fix to the pipeline, a
    failure, or a change of settings). A ready document stays searchable in its
    current version until the new one replaces it. An ingestion already queued
    or running is not queued twice."""
    with transaction.atomic():
        back_to_pending(document)
        audit.record(
            audit.Action.DOCUMENT_REINGEST,
            actor=actor,
            channel=document.channel,
            target=document,
        )
        transaction.on_commit(partial(enqueue_ingestion, document.pk), robust=True)


def back_to_pending(document: Document) -> None:
    """Before queueing a document's ingestion again (re-ingest, a new
    revision): a document that failed or waits goes back to pending with no
    reason; a ready one stays ready (searchable) and a processing one is left
    to its worker."""
    if document.status not in (Status.READY, Status.PROCESSING):
        Document.objects.filter(pk=document.pk).update(
            status=Status.PENDING, status_reason="", updated_at=timezone.now()
        )
        document.status, document.status_reason = Status.PENDING, ""


def delete_document(*, document: Document, actor: Actor) -> None:
    """Delete the document, its pages and chunks, then (after commit) its stored
    original and page images; bumps the channel's corpus version."""
    with transaction.atomic():
        locked = (
            Document.objects.select_for_update()
            .select_related("channel")
            .get(pk=document.pk)
        )
        names = [
            locked.file.name,
            *page_image_names(locked),
            *revisions.stored_names(locked),
        ]
        indexing.forget_chunks(locked.channel, locked.pk)
        audit.record(
            audit.Action.DOCUMENT_DELETE,
            actor=actor,
            channel=locked.channel,
            target=locked,
        )
        locked.delete()
        bump_corpus_version(channel_id=locked.channel_id)
        transaction.on_commit(partial(delete_files, names))


def delete_channel(*, channel: Channel, actor: Actor) -> None:
    """Delete the channel: each of its documents through delete_document (pages,
    chunks, stored originals and page images), then the channel itself."""
    for document in Document.objects.for_channel(channel).order_by("pk"):
        delete_document(document=document, actor=actor)
    with transaction.atomic():
        audit.record(
            audit.Action.CHANNEL_DELETE, actor=actor, channel=channel, target=channel
        )
        channel.delete()
