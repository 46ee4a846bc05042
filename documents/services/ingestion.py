"""Ingestion of one document, as the worker runs it: read, chunk, embed, and
swap the new pages and chunks in.

Below the queue (services/queue.py) and the task that calls it
(documents.tasks), so that uploads can queue ingestions without an import
cycle; the admin, the commands and the demo call ingest_document directly to
ingest synchronously.
"""

import logging
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from documents import locks, revisions
from documents.ingestion.chunking import TextChunk
from documents.ingestion.deadline import Deadline
from documents.ingestion.files import (
    delete_files,
    local_copy,
    store_page_images,
)
from documents.ingestion.parsed import ParsedDocument, UnreadableFile
from documents.ingestion.parsers import parse_file
from documents.ingestion.pipeline import ChunkStream, EmbeddingFailed
from documents.ingestion.titles import file_title
from documents.limits import clip
from documents.models import Chunk, Document, DocumentRevision, Page
from documents.search import indexing
from documents.services.channels import bump_corpus_version

logger = logging.getLogger(__name__)

Status = Document.Status

INTERNAL_ERROR_REASON = (
    "Ingestion failed because of an internal error (details are in the server "
    "log). Try again, or ask an administrator."
)
EMBEDDING_ERROR_REASON = (
    "Computing the embeddings failed (details are in the server log). Try again later."
)
# Shown while a ready document is read again; `Document.reingesting` is the state.
REINGESTING_NOTE = (
    "Re-ingesting: the previous version stays searchable until the new one is ready."
)
MAX_REASON_CHARS = 2000


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
    served revision; until then a ready document is being re-ingested
    (`reingesting`), as with a re-ingest. `on_switch` runs inside that
    transaction once the new rows are written, before it commits (tests pause
    there).
    """
    # The lease tells recovery (services/recovery.py) this ingestion is alive.
    with locks.lease(locks.Namespace.INGESTION, document_id):
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
    fields = _TitleFields(document)
    try:
        with tempfile.TemporaryDirectory(prefix="quire-ingest-") as tmp:
            work_dir = Path(tmp)
            # Pages are chunked and embedded while the reader reads the rest.
            deadline = Deadline(settings.INGEST_DOCUMENT_TIMEOUT)
            retitle = _retitles(document, revision)
            stream = ChunkStream(
                chunk_size=settings.CHUNK_SIZE,
                chunk_overlap=settings.CHUNK_OVERLAP,
                group=settings.EMBEDDING_BATCH_SIZE,
                max_chunks=settings.INGEST_MAX_CHUNKS,
                deadline=deadline,
            )

            def use_title(parsed_title: str) -> None:
                # Chunks carry the title the document will have.
                stream.title = decided_title(
                    document, parsed_title, retitle=retitle, fields=fields
                )

            try:
                parsed = parse_file(
                    local_copy(source, work_dir),
                    source.content_type,
                    work_dir=work_dir,
                    on_pages=stream.add_pages,
                    on_title=use_title,
                    deadline=deadline,
                )
                # While the last chunks are embedded, the work of the
                # replacement that needs no vectors and no lock.
                stream.submit_rest()
                new_images = store_page_images(document, parsed)
                lexemes = indexing.chunk_lexemes(stream.chunks)
                vectors = _embed(stream)
            finally:
                stream.close()
        return _replace_content(
            document_id,
            parsed=parsed,
            chunks=stream.chunks,
            vectors=vectors,
            model_name=stream.model_name,
            images=new_images,
            revision=revision,
            on_switch=on_switch,
            title_fields=fields,
            lexemes=lexemes,
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


def _retitles(document: Document, revision: DocumentRevision | None) -> bool:
    """Whether the file may name the document: a title is kept over a new
    revision, as the document's metadata is."""
    return revision is None or document.ingested_at is None


class _TitleFields:
    """The channel's metadata fields, loaded the first time a title is decided
    and reused for the final one (one query per ingestion, not two)."""

    def __init__(self, document: Document):
        self._channel = document.channel
        self._fields: list | None = None

    def get(self) -> list:
        if self._fields is None:
            self._fields = list(self._channel.metadata_fields.all())
        return self._fields


def decided_title(
    document: Document,
    parsed_title: str,
    *,
    retitle: bool,
    fields: _TitleFields | None = None,
) -> str:
    """The document's title once it is read: a title the administrator gave
    wins; one Quire made up is replaced by the metadata's "title", the file's
    own title (`parsed_title`) or one made from the file name. `fields` are
    the channel's metadata fields when they were loaded already."""
    if not retitle or document.title not in _automatic_titles(
        document.original_filename
    ):
        return document.title
    fields = fields or _TitleFields(document)
    return clip(
        metadata_title(fields.get(), document.metadata)
        or parsed_title
        or file_title(document.original_filename),
        Document,
        "title",
    )


def _automatic_titles(filename: str) -> set[str]:
    return {
        "",
        clip(filename, Document, "title"),
        clip(file_title(filename), Document, "title"),
    }


def _start_processing(document_id: int) -> Document:
    with transaction.atomic():
        # The channel comes along (the title needs it) but is not locked.
        document = (
            Document.objects.select_for_update(of=("self",))
            .select_related("channel")
            .get(pk=document_id)
        )
        if document.status == Status.READY:
            document.reingesting = True
            document.status_reason = REINGESTING_NOTE
        else:
            document.status, document.status_reason = Status.PROCESSING, ""
        document.save(
            update_fields=["status", "status_reason", "reingesting", "updated_at"]
        )
        # "Processing" only informs: the ingestion's own end (ready or failed)
        # commits durably, and so flushes this commit to disk with it, so its
        # commit need not wait for the disk (a crash before then leaves the
        # status it had; the queue's recovery runs the task again).
        _commit_without_waiting_for_disk()
    return document


def _commit_without_waiting_for_disk() -> None:
    """Let the current transaction's commit return before its WAL is flushed
    (PostgreSQL's synchronous_commit, for this transaction only)."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL synchronous_commit TO OFF")


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
    title_fields: _TitleFields | None = None,
    lexemes: list | None = None,
) -> Document:
    with transaction.atomic():
        document = (
            Document.objects.select_for_update()
            .select_related("channel")
            .get(pk=document_id)
        )
        channel = document.channel
        old_pages = list(
            Page.objects.filter(document=document).values_list("image", flat=True)
        )
        old_images = [name for name in old_pages if name]
        retitle = _retitles(document, revision)
        if revision is not None:
            old_images = revisions.switch(document, revision, old_images=old_images)
        indexing.forget_chunks(channel, document.pk)
        Chunk.objects.filter(document=document).delete()
        if old_pages:  # a first ingestion has none: no statement for them
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
                context=chunk.context,
                embedding=vector,
                embedding_model=model_name,
            )
            for chunk, vector in zip(chunks, vectors, strict=True)
        ]
        indexing.prepare_chunks(channel, new_chunks, counts=lexemes)
        Chunk.objects.bulk_create(new_chunks, batch_size=500)

        document.title = decided_title(
            document, parsed.title, retitle=retitle, fields=title_fields
        )
        document.status = Status.READY
        document.reingesting = False
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
        document.reingesting = False
        document.status_reason = reason[:MAX_REASON_CHARS]
        document.save(
            update_fields=["status", "status_reason", "reingesting", "updated_at"]
        )
    return document


def metadata_title(fields, metadata: dict) -> str:
    """The metadata's "title" value when the channel has such a field (it names
    the document unless an administrator gave a title)."""
    value = metadata.get("title")
    if any(field.name == "title" for field in fields) and isinstance(value, str):
        return value.strip()
    return ""
