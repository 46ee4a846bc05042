"""The one interface every kind of source implements.

A source lists entries and opens one. Sync (elsewhere) compares the listing with
a channel; it needs three promises from every kind, whatever the service:

- a stable ``key`` per entry, so a changed entry becomes a revision of its
  document rather than a new one;
- a ``version`` marker that changes when the content or the gathered metadata
  changes, so an unchanged entry is skipped without being downloaded;
- a listing that either ends normally, meaning "this is everything", or raises
  ``SourceError``, meaning "cut short": a caller must never treat an entry
  missing from a cut-short listing as removed.

A kind that cannot list one entry properly yields ``Skipped`` for it instead of
leaving it out, so the entry fails with a reason and is not taken as removed.
"""

from __future__ import annotations

import io
import json
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Any, ClassVar

SIDECAR_SUFFIX = ".meta.json"
# A sidecar is a handful of fields, never a document.
SIDECAR_MAX_BYTES = 64 * 1024


class SourceError(Exception):
    """A listing was cut short or an entry could not be opened.

    ``reason`` is written for the person who configured the source.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class SourceConfigError(SourceError):
    """A source's configuration names something the operator does not allow,
    or is malformed; raised before any request is made."""


class BudgetExceeded(SourceError):
    """The listing stopped at a budget (pages, bytes, sitemaps): what was
    yielded is real, but entries past the budget were never seen."""


class EntryGone(SourceError):
    """The entry was removed between the listing and the open."""


class EntryTooLarge(SourceError):
    """The entry is larger than the bytes the caller accepts."""


@dataclass(frozen=True)
class Entry:
    """One item of a source, as a listing sees it.

    ``key`` is stable across listings (a relative path, an object key, a
    normalised URL); ``version`` changes whenever the content or the metadata
    the source gathers changes. ``metadata`` holds plain JSON values only.
    """

    key: str
    version: str
    name: str
    size: int | None = None
    content_type: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    source_url: str | None = None


@dataclass(frozen=True)
class Skipped:
    """An entry the source saw but could not list: it fails with ``reason``
    and must not be taken as removed."""

    key: str
    reason: str


class Source(ABC):
    """A place documents live. Subclasses set ``kind`` and implement
    ``from_config``, ``list`` and ``open``; they are used as context managers
    so a kind may hold a connection or spooled bodies for one listing.
    """

    kind: ClassVar[str]

    @classmethod
    @abstractmethod
    def from_config(cls, config: Mapping[str, Any], *, max_bytes: int) -> Source:
        """Build the source from a stored configuration, checking it against
        what the operator declared in settings; raise SourceConfigError."""

    @classmethod
    @abstractmethod
    def config_for(cls, location: str, **options: Any) -> dict[str, Any]:
        """The configuration a person's one-line location gives (a path, a
        bucket and prefix, a URL), with the kind's options; checked later by
        from_config."""

    @staticmethod
    @abstractmethod
    def location_of(config: Mapping[str, Any]) -> str:
        """The configuration as the one line a person reads (config_for's
        inverse)."""

    @abstractmethod
    def list(self, known: Mapping[str, str] | None = None) -> Iterator[Entry | Skipped]:
        """Every entry, or SourceError if the listing is cut short.

        ``known`` maps keys to the versions the caller already has; a kind may
        use it to avoid work (an S3 HEAD, a conditional GET) for entries whose
        version is unchanged. It never changes which keys are listed.
        """

    def same_content(self, old_version: str, new_version: str) -> bool:
        """Whether two versions of an entry are known to hold the same bytes
        (only the gathered metadata changed), so the sync need not download
        it; False when the kind cannot tell."""
        return False

    @abstractmethod
    def open(self, entry: Entry) -> IO[bytes]:
        """The entry's bytes, at most ``max_bytes`` of them: EntryTooLarge when
        the size is known to be larger or the stream runs past it, EntryGone
        when it was removed since the listing."""

    def close(self) -> None:  # noqa: B027 (most kinds hold nothing)
        """Release what the source holds between listing and opening."""

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class BoundedReader(io.RawIOBase):
    """A read-only stream that raises EntryTooLarge instead of returning
    byte ``limit + 1``, so a caller never holds more than it accepted, even
    from a stream that never ends."""

    def __init__(self, raw: IO[bytes], *, limit: int, name: str) -> None:
        self._raw = raw
        self._limit = limit
        self._name = name
        self._read = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        wanted = min(len(buffer), self._limit - self._read + 1)
        chunk = self._raw.read(wanted)
        if not chunk:
            return 0
        self._read += len(chunk)
        if self._read > self._limit:
            raise EntryTooLarge(too_large(self._name, self._limit))
        buffer[: len(chunk)] = chunk
        return len(chunk)

    def close(self) -> None:
        try:
            self._raw.close()
        finally:
            super().close()


def too_large(name: str, limit: int) -> str:
    return f"{name} is larger than the {limit:,} bytes a document may have."


def parse_sidecar(data: bytes, name: str) -> dict[str, Any]:
    """The metadata of a ``<entry>.meta.json`` file: a JSON object; anything
    else is a SourceError naming the file."""
    if len(data) > SIDECAR_MAX_BYTES:
        raise SourceError(
            f"{name} is larger than {SIDECAR_MAX_BYTES:,} bytes; a sidecar "
            "holds metadata only."
        )
    try:
        value = json.loads(data)
    except ValueError as exc:
        raise SourceError(f"{name} is not valid JSON ({exc}).") from None
    if not isinstance(value, dict):
        raise SourceError(f"{name} must hold a JSON object of metadata fields.")
    return value
