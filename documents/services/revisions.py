"""Giving a document a new file: a new revision with the same id, title,
metadata and links.

The admin's "Replace file", `PUT /api/channels/{slug}/documents/{id}/file` and
`manage.py replace_document` call replace_document_file, so every door stores,
deduplicates and audits a revision the same way; documents.revisions holds the
switch that ingestion makes.
"""

from functools import partial

from django.core.exceptions import ValidationError
from django.core.files import File
from django.db import transaction
from django.template.defaultfilters import filesizeformat
from django.utils import timezone

from documents import revisions
from documents.access import Actor, audit
from documents.ingestion.files import sha256_of
from documents.limits import clip
from documents.models import Document, DocumentRevision
from documents.services.documents import back_to_pending, check_file, storing_failed
from documents.services.queue import enqueue_ingestion


def replace_document_file(
    *,
    document: Document,
    file,
    actor: Actor,
    filename: str | None = None,
    content_type: str | None = None,
    enqueue: bool = True,
) -> tuple[DocumentRevision, bool]:
    """Store `file` as the next revision of `document`; (revision, created).

    The file is checked as an upload is (formats, UPLOAD_MAX_BYTES;
    ValidationError naming every problem). A file whose SHA-256 is that of the
    served revision, or of one already waiting to be read, changes nothing:
    that revision is returned with created=False. Otherwise the revision is
    stored and audited (`document.revise`) and, with `enqueue`, ingested after
    commit; until its ingestion switches to it, the document serves the
    previous revision, searchable as before (and still when the new file can't
    be read: the revision records why). A document that had failed goes back
    to pending.
    """
    if not isinstance(file, File):
        file = File(file)
    name, canonical_type, size, errors = check_file(file, filename, content_type)
    if errors:
        raise ValidationError(errors)
    sha256 = sha256_of(file)
    with transaction.atomic():
        locked = (
            Document.objects.select_for_update()
            .select_related("channel")
            .get(pk=document.pk)
        )
        same = (
            DocumentRevision.objects.filter(
                document=locked, sha256=sha256, number__gte=locked.revision, failure=""
            )
            .order_by("-number")
            .first()
        )
        if same is not None:
            return same, False
        revision = DocumentRevision(
            document=locked,
            number=revisions.next_number(locked),
            created_at=timezone.now(),
            original_filename=clip(name, DocumentRevision, "original_filename"),
            content_type=canonical_type,
            size=size,
            sha256=sha256,
            actor=actor.label[:300],
            created_by=actor.user,
            created_by_key=actor.api_key
            if actor.api_key and actor.api_key.pk
            else None,
        )
        try:
            revision.file.save(name, file, save=False)
        except OSError as exc:
            raise storing_failed(name, exc) from exc
        try:
            revision.save()
            back_to_pending(locked)
            document.status, document.status_reason = (
                locked.status,
                locked.status_reason,
            )
            audit.record(
                audit.Action.DOCUMENT_REVISE,
                actor=actor,
                channel=locked.channel,
                target=locked,
                detail=f"revision {revision.number}: {name}, {filesizeformat(size)}",
            )
        except BaseException:
            revision.file.delete(save=False)
            raise
        if enqueue:
            transaction.on_commit(partial(enqueue_ingestion, locked.pk), robust=True)
    return revision, True
