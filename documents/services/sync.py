"""Syncing a source into its channel: the engine a worker runs.

A sync lists the source completely first, then applies each entry, matched to
the channel's documents by source key (never by content):

- an entry whose key is new becomes a document (create_document, as an upload:
  same formats, size limit, metadata validation and audit), unless its content
  is that of a document of this source whose key is gone from the listing: then
  the entry is that document renamed, and it keeps its id;
- an entry whose version marker changed becomes a new revision of its document
  (replace_document_file; the same content is no new revision) and/or a
  metadata edit; when the source can tell from the two versions that only
  the metadata changed (an S3 object's ETag, a file's mtime and size, with a
  new sidecar or user metadata), it is not downloaded;
- an entry whose version is the one last synced is skipped without being
  opened;
- a key gone from the listing is deleted (delete_removed) or kept; never when
  the listing was cut short (any SourceError: nothing missing from it is taken
  as removed) or when a listing that had documents came back empty.

Every entry fails alone: a `Skipped` listing, a bad metadata value, a format
Quire does not read, a file past a limit, the source's budget
(SOURCE_MAX_DOCUMENTS, SOURCE_MAX_BYTES, checked before the download) each
count as failed with the reason, and the sync goes on. Documents are written as
an `Actor(via="source")`, so the audit trail names the source and who asked.

A sync is safe to run again: a worker that died mid-sync leaves its task to
recovery (services/recovery.py), which runs it again; entries it had applied
are unchanged by then and are not counted twice.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files import File
from django.db import transaction
from django.utils import timezone

from documents import locks
from documents.access import Actor, audit
from documents.ingestion.files import sha256_of
from documents.limits import clip
from documents.metadata import clean_metadata
from documents.models import Document, MetadataField, Source, SourceSync
from documents.services.documents import (
    create_document,
    delete_document,
    update_document,
)
from documents.services.revisions import replace_document_file
from documents.sources.base import Entry, Skipped, SourceError
from documents.sources.registry import build_source

logger = logging.getLogger(__name__)

Status = SourceSync.Status
# Seconds between two writes of a running sync's progress.
PROGRESS_EVERY = 1.0
PATH_PREFIX = "path:"


class EntryFailed(Exception):
    """One entry could not be applied; `reason` is for the curator."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def map_metadata(
    fields: list[MetadataField], mapping: Mapping[str, str], values: Mapping[str, Any]
) -> dict[str, Any]:
    """The channel-field values an entry's source metadata gives: each field
    reads the source value `mapping` names for it (its own name when it is not
    mapped; "path:N" is the entry's Nth folder). Values the channel has no
    field for are ignored; the result is validated as an upload's metadata
    (ValidationError)."""
    picked: dict[str, Any] = {}
    for metadata_field in fields:
        name = mapping.get(metadata_field.name, metadata_field.name)
        if name.startswith(PATH_PREFIX):
            segments = values.get("path_segments") or []
            try:
                value = segments[int(name.removeprefix(PATH_PREFIX))]
            except (ValueError, IndexError, TypeError):
                continue
        elif name in values:
            value = values[name]
        else:
            continue
        picked[metadata_field.name] = value
    return clean_metadata(fields, picked)


@dataclass
class Run:
    """One sync in progress: its row, the source's documents by key and what
    the counts are so far."""

    sync: SourceSync
    actor: Actor
    fields: list[MetadataField]
    by_key: dict[str, Document]
    seen: set[str] = field(default_factory=set)
    renamed: set[str] = field(default_factory=set)
    last_write: float = 0.0
    # The source's documents and their bytes, for its budget; only a sync
    # writes this source's documents and one runs at a time (its lease).
    held: int = 0
    held_bytes: int = 0

    def __post_init__(self) -> None:
        self.held = len(self.by_key)
        self.held_bytes = sum(document.size for document in self.by_key.values())

    @property
    def source(self) -> Source:
        return self.sync.source

    def fail(self, key: str, reason: str) -> None:
        self.sync.failed += 1
        if len(self.sync.errors) < settings.SOURCE_SYNC_ERRORS_KEPT:
            self.sync.errors.append({"key": key, "reason": reason})

    def progress(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self.last_write >= PROGRESS_EVERY:
            self.last_write = now
            self.sync.save(update_fields=PROGRESS_FIELDS)


PROGRESS_FIELDS = ["status", "listed", "processed", *SourceSync.COUNTS, "errors"]


def sync_actor(sync: SourceSync) -> Actor:
    return Actor(via="source", user=sync.requested_by, source=sync.source.name)


def run_sync(sync_id: int) -> SourceSync:
    """Run (or resume) the sync `sync_id`; returns its row, finished.

    Two workers never sync one source at once: the second finds the source's
    lease held and fails its row with that reason. The same row run twice at
    once (its task queued twice) is run by one of them; the other returns the
    row as it is, still active, rather than failing the sync being run."""
    sync = SourceSync.objects.select_related("source__channel", "requested_by").get(
        pk=sync_id
    )
    if sync.status not in SourceSync.ACTIVE:
        return sync
    with locks.try_lease(locks.Namespace.SOURCE_SYNC_RUN, sync.pk) as mine:
        if not mine:
            return sync
        # Read again under the lease: a run that just ended may have finished it.
        sync.refresh_from_db()
        if sync.status not in SourceSync.ACTIVE:
            return sync
        with locks.try_lease(locks.Namespace.SOURCE_SYNC, sync.source_id) as held:
            if not held:
                return _finish(
                    sync,
                    Status.FAILED,
                    "Another sync of this source was running; this one did nothing.",
                )
            try:
                return _run(sync)
            except Exception as exc:
                logger.exception("Sync %s of source %s failed", sync.pk, sync.source_id)
                return _finish(
                    sync, Status.FAILED, f"The sync stopped on an error: {exc}"
                )


def _run(sync: SourceSync) -> SourceSync:
    resumed = sync.attempts > 0
    sync.attempts += 1
    sync.status = Status.LISTING
    sync.started_at = sync.started_at or timezone.now()
    if resumed:
        # Entries applied before are unchanged now and counted in added and
        # revised already; the rest is counted again from the new listing.
        sync.reason = "Resumed after the worker running it stopped."
        sync.unchanged = sync.kept = sync.failed = 0
        sync.errors = []
    sync.listed = sync.processed = 0
    sync.save()
    source = sync.source
    run = Run(
        sync=sync,
        actor=sync_actor(sync),
        fields=list(source.channel.metadata_fields.all()),
        by_key={d.source_key: d for d in Document.objects.filter(source=source)},
    )
    try:
        reader = build_source(source.kind, source.config)
    except SourceError as exc:
        return _finish(sync, Status.FAILED, exc.reason)
    with reader, tempfile.TemporaryDirectory(prefix="quire-sync-") as spool:
        known = {key: doc.source_version for key, doc in run.by_key.items()}
        entries: list[Entry | Skipped] = []
        cut_short = ""
        try:
            for item in reader.list(known):
                entries.append(item)
                run.seen.add(item.key)
                sync.listed += 1
                run.progress()
        except SourceError as exc:
            cut_short = exc.reason
        if cut_short and not entries:
            return _finish(sync, Status.FAILED, _nothing_changed(cut_short))
        sync.status = Status.SYNCING
        run.progress(force=True)
        gone = [key for key in run.by_key if key not in run.seen]
        for item in entries:
            try:
                _apply(run, reader, item, gone, spool)
            except EntryFailed as failed:
                run.fail(item.key, failed.reason)
            sync.processed += 1
            run.progress()
        if cut_short:
            return _finish(sync, Status.PARTIAL, _nothing_removed(cut_short))
        refusal = _remove(run, [k for k in gone if k not in run.renamed])
    return _finish(sync, Status.PARTIAL if refusal else Status.DONE, refusal)


def _nothing_changed(reason: str) -> str:
    return f"{reason} Nothing in the channel was changed."


def _nothing_removed(reason: str) -> str:
    return (
        f"{reason} Entries listed before it were synced; no document was "
        "removed, since the rest of the source was not seen."
    )


def _apply(run: Run, reader, item: Entry | Skipped, gone: list[str], spool: str):
    if isinstance(item, Skipped):
        raise EntryFailed(item.reason)
    document = run.by_key.get(item.key)
    if document is not None and document.source_version == item.version:
        if document.source_sync_id != run.sync.pk:  # not applied by this sync
            run.sync.unchanged += 1
        return
    try:
        metadata = map_metadata(run.fields, run.source.metadata_map, item.metadata)
    except ValidationError as exc:
        raise EntryFailed(" ".join(exc.messages)) from None
    if document is None:
        _check_budget(run, item.size or 0)
    elif reader.same_content(document.source_version, item.version):
        _revise(run, document, item, None, metadata)
        return
    with _download(reader, item, spool) as file:
        if document is None:
            document = _renamed(run, gone, sha256_of(file))
        if document is None:
            _check_budget(run, file.size)
            _add(run, item, file, metadata)
            return
        _revise(run, document, item, file, metadata)


def _check_budget(run: Run, size: int) -> None:
    """SOURCE_MAX_DOCUMENTS and SOURCE_MAX_BYTES, before a new entry is read
    (again with the real size once it is: a web page's is not known before)."""
    if run.held >= settings.SOURCE_MAX_DOCUMENTS:
        raise EntryFailed(
            f"The source holds {settings.SOURCE_MAX_DOCUMENTS:,} documents, its "
            "budget (SOURCE_MAX_DOCUMENTS); this entry was not added."
        )
    if run.held_bytes + size > settings.SOURCE_MAX_BYTES:
        raise EntryFailed(
            f"Adding it would pass the source's budget of "
            f"{settings.SOURCE_MAX_BYTES:,} bytes (SOURCE_MAX_BYTES); it was not "
            "added."
        )


class _download:
    """The entry's bytes in a temporary file of the sync's spool, as a Django
    File named as the entry; errors of the source fail the entry."""

    def __init__(self, reader, item: Entry, spool: str) -> None:
        self.reader, self.item, self.spool = reader, item, spool
        self.handle = None

    def __enter__(self) -> File:
        self.handle = tempfile.TemporaryFile(dir=self.spool)
        try:
            with self.reader.open(self.item) as stream:
                shutil.copyfileobj(stream, self.handle, 1024 * 1024)
        except SourceError as exc:
            self.handle.close()
            raise EntryFailed(exc.reason) from None
        except OSError as exc:
            self.handle.close()
            raise EntryFailed(f"{self.item.key} could not be read ({exc}).") from None
        self.handle.seek(0)
        return File(self.handle, name=self.item.name)

    def __exit__(self, *exc_info: object) -> None:
        self.handle.close()


def _renamed(run: Run, gone: list[str], sha256: str) -> Document | None:
    """The document of this source, whose key is gone from the listing, that
    holds this content: the entry is that document renamed."""
    for key in gone:
        document = run.by_key[key]
        if key not in run.renamed and document.sha256 == sha256:
            run.renamed.add(key)
            return document
    return None


def _provenance(run: Run, item: Entry) -> dict[str, Any]:
    return {
        "source": run.source,
        "source_key": item.key,
        "source_version": clip(item.version, Document, "source_version"),
        "source_url": item.source_url or "",
        "source_sync": run.sync,
    }


def _add(run: Run, item: Entry, file: File, metadata: dict) -> None:
    try:
        document = create_document(
            channel=run.source.channel,
            file=file,
            actor=run.actor,
            filename=item.name,
            metadata=metadata,
            content_type=item.content_type,
            provenance=_provenance(run, item),
        )
    except ValidationError as exc:
        raise EntryFailed(" ".join(exc.messages)) from None
    run.by_key[item.key] = document
    run.held += 1
    run.held_bytes += document.size
    run.sync.added += 1


def _revise(
    run: Run, document: Document, item: Entry, file: File | None, metadata: dict
) -> None:
    """The entry's new file (None: its content is known unchanged, only the
    metadata may be new), metadata and key onto its document."""
    new_file = False
    if file is not None:
        try:
            revision, new_file = replace_document_file(
                document=document,
                file=file,
                actor=run.actor,
                filename=item.name,
                content_type=item.content_type,
            )
        except ValidationError as exc:
            raise EntryFailed(" ".join(exc.messages)) from None
        if new_file:  # the budget counts the newest file of each document
            run.held_bytes += revision.size - document.size
    new_metadata = metadata != document.metadata
    if new_metadata:
        update_document(
            document=document, title=document.title, metadata=metadata, actor=run.actor
        )
    renamed = document.source_key != item.key
    if renamed:
        run.by_key.pop(document.source_key, None)
        run.by_key[item.key] = document
    provenance = _provenance(run, item)
    Document.objects.filter(pk=document.pk).update(
        **provenance, updated_at=timezone.now()
    )
    for name, value in provenance.items():
        setattr(document, name, value)
    if new_file or new_metadata or renamed:
        run.sync.revised += 1
    else:
        run.sync.unchanged += 1


def _remove(run: Run, gone: list[str]) -> str:
    """Delete or keep the documents whose keys are gone; the reason when a
    removal was refused."""
    if not gone:
        return ""
    if not run.source.delete_removed:
        run.sync.kept += len(gone)
        return ""
    if not run.seen:
        run.sync.kept += len(gone)
        return (
            "The source listed nothing, though it had documents here (an "
            "unmounted folder, an emptied bucket?); none was removed. Delete "
            "them in the admin if the source is really empty."
        )
    for key in gone:
        document = run.by_key.pop(key)
        delete_document(document=document, actor=run.actor)
        run.held -= 1
        run.held_bytes -= document.size
        run.sync.removed += 1
        run.progress()
    return ""


def _finish(sync: SourceSync, status: str, reason: str = "") -> SourceSync:
    sync.status = status
    if reason:
        sync.reason = reason
    sync.finished_at = timezone.now()
    sync.started_at = sync.started_at or sync.finished_at
    with transaction.atomic():
        sync.save()
        audit.record(
            audit.Action.SOURCE_SYNC,
            actor=sync_actor(sync),
            channel=sync.source.channel,
            target=sync.source,
            detail=summary(sync) + (f"; {sync.reason}" if sync.reason else ""),
        )
    return sync


def summary(sync: SourceSync) -> str:
    """The one line a sync ends with (manage.py sync_source prints it)."""
    return (
        f"added {sync.added}, revised {sync.revised}, unchanged {sync.unchanged}, "
        f"removed {sync.removed}, failed {sync.failed}"
    )
