"""Document writes: upload, (re-)ingestion and deletion (of one document, or
of a channel with all of its documents).

The admin, the API, the `ingest` command and the background task all call these
functions, so every path validates and stores documents the same way.
"""

import logging
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path, PureWindowsPath

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files import File
from django.db import connection, transaction
from django.template.defaultfilters import filesizeformat
from django.utils import timezone

from documents import revisions
from documents.access import Actor, audit
from documents.ingestion import formats
from documents.ingestion.chunking import TextChunk
from documents.ingestion.files import (
    delete_files,
    local_copy,
    page_image_names,
    sha256_of,
    store_page_images,
)
from documents.ingestion.parsed import ParsedDocument, UnreadableFile
from documents.ingestion.parsers import parse_file
from documents.ingestion.pipeline import ChunkStream, EmbeddingFailed
from documents.ingestion.titles import file_title
from documents.limits import clip
from documents.metadata import clean_metadata
from documents.models import Channel, Chunk, Document, DocumentRevision, Page
from documents.search import indexing
from documents.services.channels import bump_corpus_version
from documents.services.queue import REINGESTING_REASON, enqueue_ingestion
from documents.services.recovery import ingestion_lease

logger = logging.getLogger(__name__)

Status = Document.Status

INTERNAL_ERROR_REASON = (
    "Ingestion failed because of an internal error (details are in the server "
    "log). Try again, or ask an administrator."
)
EMBEDDING_ERROR_REASON = (
    "Computing the embeddings failed (details are in the server log). Try again later."
)
MAX_REASON_CHARS = 2000


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
    ingest synchronously with ingest_document(). The upload is recorded in the
    audit trail as `actor`'s.
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
            title.strip() or _metadata_title(fields, cleaned) or file_title(name),
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
    )
    with transaction.atomic():
        # Uploads of one file at the same moment queue here, so one of them wins.
        _lock_content(channel.pk, document.sha256)
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
                f"({content_type or 'unknown'}). Upload a "
                f"{formats.SUPPORTED_DESCRIPTION}."
            )
    size = file.size or 0
    if size > settings.UPLOAD_MAX_BYTES:
        errors.append(
            f"{name or 'The file'} is {filesizeformat(size)}; the upload limit is "
            f"{filesizeformat(settings.UPLOAD_MAX_BYTES)}."
        )
    return name, canonical_type, size, errors


def storing_failed(name: str, exc: OSError) -> ValidationError:
    logger.exception("Storing %s failed", name)
    return ValidationError(
        f"{name} could not be stored ({exc.strerror or exc}); nothing was "
        "saved. Try again later, or ask an administrator."
    )


def _lock_content(channel_id: int, sha256: str) -> None:
    """A transaction lock on (channel, content); the two-key form keeps it apart
    from the ingestion leases (services/recovery.py), which use one key."""
    content_key = int(sha256[:8], 16) - 2**31
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(%s, %s)", [channel_id, content_key]
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
        or _metadata_title(fields, cleaned)
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
        if document.status not in (Status.READY, Status.PROCESSING):
            Document.objects.filter(pk=document.pk).update(
                status=Status.PENDING, status_reason="", updated_at=timezone.now()
            )
            document.status, document.status_reason = Status.PENDING, ""
        audit.record(
            audit.Action.DOCUMENT_REINGEST,
            actor=actor,
            channel=document.channel,
            target=document,
        )
        transaction.on_commit(partial(enqueue_ingestion, document.pk), robust=True)


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


def ingest_document(
    *, document_id: int, on_switch: Callable[[], None] | None = None
) -> Document:
    """Parse, chunk and embed the document, then swap in its new pages and chunks.

    Status moves pending → processing → ready, or failed with a reason a person
    can read (empty file, not a PDF, encrypted, truncated, corrupt, too many
    pages...). A document that is already ready stays ready and searchable while
    it is re-ingested. Parsing, rendering, chunking and embedding run outside any
    transaction; the replacement is one transaction that locks the document row,
    so readers see the old pages and chunks or the new ones, never a mix.

    On failure the previous version's pages, chunks and images are left intact
    (only the status and reason change). Unexpected errors are logged with their
    traceback; the stored reason stays short. A document with no extractable
    text anywhere (scanned) ends ready with has_text=False, its pages and images
    and no chunks. Raises Document.DoesNotExist if the document is (or gets)
    deleted.

    A document given a new file (a pending revision, documents.revisions) is
    read from that file, and the same replacement transaction makes it the
    served revision. `on_switch` runs inside that transaction once the new
    rows are written, before it commits (tests pause there).
    """
    # The lease tells recovery (services/recovery.py) this ingestion is alive.
    with ingestion_lease(document_id):
        document = _ingest(document_id, on_switch)
        # A file given while this ran was not queued (one ingestion per
        # document at a time), so it is read now.
        while (
            document.status == Status.READY
            and revisions.pending_revision(document) is not None
        ):
            document = _ingest(document_id, on_switch)
        return document


def _ingest(document_id: int, on_switch: Callable[[], None] | None) -> Document:
    document = _start_processing(document_id)
    revision = revisions.pending_revision(document)
    source = revisions.as_read(document, revision)
    new_images: dict[int, str] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="quire-ingest-") as tmp:
            work_dir = Path(tmp)
            # Pages are chunked and embedded while the reader reads the rest.
            stream = ChunkStream(
                chunk_size=settings.CHUNK_SIZE,
                chunk_overlap=settings.CHUNK_OVERLAP,
                group=settings.EMBEDDING_BATCH_SIZE,
            )
            try:
                parsed = parse_file(
                    local_copy(source, work_dir),
                    source.content_type,
                    work_dir=work_dir,
                    on_pages=stream.add_pages,
                )
                vectors = _embed(stream)
            finally:
                stream.close()
            new_images = store_page_images(document, parsed)
        return _replace_content(
            document_id,
            parsed=parsed,
            chunks=stream.chunks,
            vectors=vectors,
            model_name=stream.model_name,
            images=new_images,
            revision=revision,
            on_switch=on_switch,
        )
    except Document.DoesNotExist:
        delete_files(new_images.values())
        raise
    except UnreadableFile as exc:
        delete_files(new_images.values())
        return _mark_failed(document_id, exc.reason, revision)
    except EmbeddingFailed:
        delete_files(new_images.values())
        return _mark_failed(document_id, EMBEDDING_ERROR_REASON, revision)
    except Exception:
        logger.exception("Ingesting document %s failed", document_id)
        delete_files(new_images.values())
        return _mark_failed(document_id, INTERNAL_ERROR_REASON, revision)


def _metadata_title(fields, metadata: dict) -> str:
    value = metadata.get("title")
    if any(field.name == "title" for field in fields) and isinstance(value, str):
        return value.strip()
    return ""


def _automatic_titles(filename: str) -> set[str]:
    return {
        "",
        clip(filename, Document, "title"),
        clip(file_title(filename), Document, "title"),
    }


def _start_processing(document_id: int) -> Document:
    with transaction.atomic():
        document = Document.objects.select_for_update().get(pk=document_id)
        if document.status == Status.READY:
            document.status_reason = REINGESTING_REASON
        else:
            document.status, document.status_reason = Status.PROCESSING, ""
        document.save(update_fields=["status", "status_reason", "updated_at"])
    return document


def _embed(stream: ChunkStream) -> list:
    """The stream's vectors (a step of its own, for benchmarks/ingest.py)."""
    return stream.finish()


def _replace_content(
    document_id: int,
    *,
    parsed: ParsedDocument,
    chunks: list[TextChunk],
    vectors: list,
    model_name: str,
    images: dict[int, str],
    revision: DocumentRevision | None = None,
    on_switch: Callable[[], None] | None = None,
) -> Document:
    with transaction.atomic():
        document = (
            Document.objects.select_for_update()
            .select_related("channel")
            .get(pk=document_id)
        )
        channel = document.channel
        old_images = page_image_names(document)
        # A title kept over a new revision, as the document's metadata is.
        retitle = revision is None or document.ingested_at is None
        if revision is not None:
            old_images = revisions.switch(document, revision, old_images=old_images)
        indexing.forget_chunks(channel, document.pk)
        Chunk.objects.filter(document=document).delete()
        Page.objects.filter(document=document).delete()
        pages = Page.objects.bulk_create(
            Page(
                document=document,
                number=page.number,
                text=page.text,
                has_text=page.has_text,
                image=images.get(page.number, ""),
                width=page.width,
                height=page.height,
                ocr=page.ocr,
                lines=page.lines,
            )
            for page in parsed.pages
        )
        by_number = {page.number: page for page in pages}
        new_chunks = [
            Chunk(
                document=document,
                page=by_number[chunk.page_number],
                channel=channel,
                page_number=chunk.page_number,
                order=chunk.order,
                text=chunk.text,
                embedding=vector,
                embedding_model=model_name,
            )
            for chunk, vector in zip(chunks, vectors, strict=True)
        ]
        indexing.prepare_chunks(channel, new_chunks)
        Chunk.objects.bulk_create(new_chunks, batch_size=500)

        # A title the administrator gave wins; one Quire made up is replaced.
        if retitle and document.title in _automatic_titles(document.original_filename):
            document.title = clip(
                _metadata_title(channel.metadata_fields.all(), document.metadata)
                or parsed.title
                or file_title(document.original_filename),
                Document,
                "title",
            )
        document.status = Status.READY
        document.status_reason = parsed.status_note()[:MAX_REASON_CHARS]
        document.has_text = parsed.has_text
        document.page_count = len(pages)
        document.chunk_count = len(new_chunks)
        document.ingested_at = timezone.now()
        document.save()
        bump_corpus_version(channel_id=channel.pk)
        if on_switch is not None:
            on_switch()
        transaction.on_commit(partial(delete_files, old_images))
    return document


def _mark_failed(
    document_id: int, reason: str, revision: DocumentRevision | None = None
) -> Document:
    with transaction.atomic():
        document = Document.objects.select_for_update().get(pk=document_id)
        if revision is not None and document.status == Status.READY:
            # A new file that can't be read leaves the served revision served.
            reason = revisions.record_failure(document, revision, reason)
        else:
            document.status = Status.FAILED
        document.status_reason = reason[:MAX_REASON_CHARS]
        document.save(update_fields=["status", "status_reason", "updated_at"])
    return document
