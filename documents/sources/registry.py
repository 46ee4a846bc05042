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


def kind_of(kind: str) -> type[Source]:
    try:
        return KINDS[kind]
    except KeyError:
        raise SourceConfigError(
            f"{kind!r} is not a kind of source ({', '.join(KINDS)})."
        ) from None


def config_for(kind: str, location: str, **options: Any) -> dict[str, Any]:
    """The configuration of a `kind` source at `location` (see each kind's
    config_for); SourceConfigError for an unknown kind."""
    return kind_of(kind).config_for(location, **options)


def location_of(kind: str, config: Mapping[str, Any]) -> str:
    return KINDS[kind].location_of(config) if kind in KINDS else ""


def build_source(
    kind: str, config: Mapping[str, Any], *, max_bytes: int | None = None
) -> Source:
    """The source a stored (kind, configuration) describes, checked against
    the operator's settings; entries are bounded like uploads by default."""
    return kind_of(kind).from_config(
        config,
        max_bytes=settings.UPLOAD_MAX_BYTES if max_bytes is None else max_bytes,
    )
