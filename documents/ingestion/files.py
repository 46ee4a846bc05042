"""Stored files of ingestion: the original's local copy, page images, cleanup."""

import hashlib
import logging
import secrets
import shutil
from collections.abc import Iterable
from pathlib import Path, PurePath

from django.core.files import File
from django.core.files.storage import default_storage

from documents.ingestion.parsed import ParsedDocument
from documents.models import Document, Page, page_image_upload_to

logger = logging.getLogger(__name__)


def sha256_of(file: File) -> str:
    """Hex SHA-256 of the file's content; leaves the file at its start."""
    digest = hashlib.sha256()
    file.seek(0)
    for block in file.chunks():
        digest.update(block)
    file.seek(0)
    return digest.hexdigest()


def local_copy(document: Document, work_dir: Path) -> Path:
    """A path to the original on local disk (copied into `work_dir` when the
    storage is remote, such as S3)."""
    try:
        return Path(document.file.path)
    except NotImplementedError:
        target = work_dir / f"original{PurePath(document.file.name).suffix}"
        with document.file.open("rb") as source, target.open("wb") as out:
            shutil.copyfileobj(source, out)
        return target


def store_page_images(document: Document, parsed: ParsedDocument) -> dict[int, str]:
    """Save rendered pages under names unique to this ingestion, so the previous
    version's images stay valid until the replacement commits. Returns each
    stored name by page number; on error, removes what it saved."""
    token = secrets.token_hex(4)
    names: dict[int, str] = {}
    try:
        for page in parsed.pages:
            if page.image_path is None:
                continue
            target = page_image_upload_to(
                Page(document=document, number=page.number),
                f"page-{page.number:05d}-{token}.png",
            )
            with page.image_path.open("rb") as handle:
                names[page.number] = default_storage.save(target, File(handle))
    except BaseException:
        delete_files(names.values())
        raise
    return names


def page_image_names(document: Document) -> list[str]:
    """Stored names of the document's current page images."""
    return [
        name
        for name in Page.objects.filter(document=document).values_list(
            "image", flat=True
        )
        if name
    ]


def delete_files(names: Iterable[str]) -> None:
    """Delete stored files, logging (not raising) when one can't be deleted: a
    leftover file must not undo a committed change."""
    for name in names:
        if not name:
            continue
        try:
            default_storage.delete(name)
        except Exception:
            logger.warning("Could not delete stored file %s", name, exc_info=True)
