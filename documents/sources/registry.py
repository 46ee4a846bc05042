"""The kinds of source, in one table: a new kind (Google Drive, SharePoint,
Confluence) is one ``Source`` subclass and one row here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings

from documents.sources.base import Source, SourceConfigError
from documents.sources.folder import FolderSource
from documents.sources.s3 import S3Source
from documents.sources.web.source import WebSource

KINDS: dict[str, type[Source]] = {
    FolderSource.kind: FolderSource,
    S3Source.kind: S3Source,
    WebSource.kind: WebSource,
}


def build_source(
    kind: str, config: Mapping[str, Any], *, max_bytes: int | None = None
) -> Source:
    """The source a stored (kind, configuration) describes, checked against
    the operator's settings; entries are bounded like uploads by default."""
    try:
        source_class = KINDS[kind]
    except KeyError:
        raise SourceConfigError(
            f"{kind!r} is not a kind of source ({', '.join(KINDS)})."
        ) from None
    return source_class.from_config(
        config,
        max_bytes=settings.UPLOAD_MAX_BYTES if max_bytes is None else max_bytes,
    )
