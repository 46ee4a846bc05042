"""A document's revisions: which file ingestion reads, the switch to a new
revision (inside the ingestion's replacement transaction), the pages kept for
citations of older revisions, and the retention of older originals.

A document serves one revision (`Document.revision`): its file, pages and
chunks. A replacement (documents.services.revisions) adds a higher-numbered
DocumentRevision; the next ingestion reads that file and, in the transaction
that swaps pages and chunks, copies the served pages into RevisionPage rows of
the revision they came from and makes the new revision the served one. Search
only ever sees Chunk rows, which belong to the served revision alone, so the
switch has the guarantee re-ingestion has: old chunks or new ones, never both.
"""

import copy

from django.conf import settings
from django.db.models import Max
from django.utils import timezone

from documents.access import Actor
from documents.models import Document, DocumentRevision, Page, RevisionPage


def record_first_revision(*, document: Document, actor: Actor) -> DocumentRevision:
    """Write revision 1 of a new document: its stored file as uploaded, so the
    history starts with the upload."""
    return DocumentRevision.objects.create(
        document=document,
        number=1,
        created_at=document.created_at,
        served_at=document.created_at,
        file=document.file.name,
        original_filename=document.original_filename,
        content_type=document.content_type,
        size=document.size,
        sha256=document.sha256,
        actor=actor.label[:300],
        created_by=actor.user,
        created_by_key=actor.api_key if actor.api_key and actor.api_key.pk else None,
    )


def next_number(document: Document) -> int:
    """The number a new revision of `document` gets (call with the document
    row locked)."""
    latest = DocumentRevision.objects.filter(document=document).aggregate(
        latest=Max("number")
    )["latest"]
    return max(latest or 0, document.revision) + 1


def pending_revision(document: Document) -> DocumentRevision | None:
    """The newest revision given after the served one, which the next
    ingestion reads; None when the served revision is the newest (or the newer
    file could not be read)."""
    return (
        DocumentRevision.objects.filter(
            document=document, number__gt=document.revision, failure=""
        )
        .order_by("-number")
        .first()
    )


def record_failure(document: Document, revision: DocumentRevision, reason: str) -> str:
    """Note that `revision` could not be read while `document` keeps serving
    its revision; returns the document's status reason saying so."""
    DocumentRevision.objects.filter(pk=revision.pk).update(failure=reason[:2000])
    return (
        f"Revision {revision.number} ({revision.original_filename}) could not be "
        f"read, so revision {document.revision} is still served: {reason}"
    )


def as_read(document: Document, revision: DocumentRevision | None) -> Document:
    """The document as ingestion reads it: with the pending revision's file
    and type (an unsaved copy), or itself when there is none."""
    if revision is None:
        return document
    source = copy.copy(document)
    source.file = revision.file
    source.content_type = revision.content_type
    source.original_filename = revision.original_filename
    return source


def switch(
    document: Document, revision: DocumentRevision, *, old_images: list[str]
) -> list[str]:
    """Make `revision` the served one of the locked `document` (saved by the
    caller), keeping the served pages for citations while their original is
    kept. Call inside the replacement transaction, before the pages are
    deleted. Returns the stored files to delete once it commits: the page
    images that were not kept, and what the retention drops."""
    now = timezone.now()
    served = DocumentRevision.objects.filter(
        document=document, number=document.revision
    ).first()
    kept_images: set[str] = set()
    if served is not None and served.file and _keeps_older(1):
        pages = Page.objects.filter(document=document).values(
            "number", "text", "has_text", "image", "width", "height", "ocr", "lines"
        )
        archived = [RevisionPage(revision=served, **values) for values in pages]
        RevisionPage.objects.bulk_create(archived, batch_size=500)
        kept_images = {page.image.name for page in archived if page.image}
    document.file = revision.file.name
    document.original_filename = revision.original_filename
    document.content_type = revision.content_type
    document.size = revision.size
    document.sha256 = revision.sha256
    document.revision = revision.number
    document.revised_at = now
    DocumentRevision.objects.filter(pk=revision.pk).update(served_at=now)
    return [name for name in old_images if name not in kept_images] + _prune(document)


def _keeps_older(count: int) -> bool:
    """Whether the retention keeps `count` revisions besides the served one."""
    kept = settings.DOCUMENT_REVISIONS_KEPT
    return not kept or kept > count


def _prune(document: Document) -> list[str]:
    """Drop the originals (and kept pages) of revisions older than the
    DOCUMENT_REVISIONS_KEPT newest; the history rows stay."""
    kept = settings.DOCUMENT_REVISIONS_KEPT
    if not kept:
        return []
    dropped = list(
        DocumentRevision.objects.filter(document=document, number__lt=document.revision)
        .exclude(file="")
        .order_by("-number")[kept - 1 :]
    )
    if not dropped:
        return []
    pages = RevisionPage.objects.filter(revision__in=dropped)
    names = [revision.file.name for revision in dropped]
    names += [name for name in pages.values_list("image", flat=True) if name]
    pages.delete()
    DocumentRevision.objects.filter(pk__in=[r.pk for r in dropped]).update(file="")
    return names


def stored_names(document: Document) -> list[str]:
    """Every stored file of the document's revisions besides the served
    original and pages (for deleting the document)."""
    names = [
        name
        for name in DocumentRevision.objects.filter(document=document)
        .exclude(file="")
        .values_list("file", flat=True)
        if name != document.file.name
    ]
    names += [
        name
        for name in RevisionPage.objects.filter(
            revision__document=document
        ).values_list("image", flat=True)
        if name
    ]
    return names


def revision_page(
    document: Document, revision: int, number: int
) -> RevisionPage | None:
    """Page `number` of an older revision of `document`, while it is kept."""
    return RevisionPage.objects.filter(
        revision__document=document, revision__number=revision, number=number
    ).first()


def history(document: Document) -> list[DocumentRevision]:
    """The document's revisions, newest first."""
    return list(DocumentRevision.objects.filter(document=document).order_by("-number"))
