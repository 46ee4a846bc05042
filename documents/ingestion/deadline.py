"""How long one document's ingestion may take, and how much work it may make.

Every format runs under the same two bounds, so that no single upload holds a
worker for hours (a 50 MB text file of random words would need hours of
embedding): the deadline (INGEST_DOCUMENT_TIMEOUT) covers reading, clean-up,
chunking and embedding, and the chunk budget (INGEST_MAX_CHUNKS) is checked
as chunks are made, before any of them past the budget is embedded. Either
fails the document with a reason a person understands.
"""

import time
from collections.abc import Callable

from documents.ingestion.parsed import UnreadableFile


class DeadlinePassed(UnreadableFile):
    """The document's ingestion ran past its deadline."""

    def __init__(self, seconds: float):
        super().__init__(
            f"Ingesting this document took longer than {seconds:g} seconds, the "
            "limit for one document (setting INGEST_DOCUMENT_TIMEOUT), so it was "
            "stopped; other documents are not held up by it. Split it into "
            "smaller files, or ask an administrator to raise the limit."
        )


class TooManyChunks(UnreadableFile):
    """The document would make more chunks than one document may have."""

    def __init__(self, limit: int):
        super().__init__(
            f"This document has too much text: it would make more than {limit:,} "
            "passages to search, the limit for one document (setting "
            "INGEST_MAX_CHUNKS), so it was not embedded. Split it into smaller "
            "files, or ask an administrator to raise the limit."
        )


class Deadline:
    """When one document's ingestion must end; `clock` is injectable so that
    tests control time instead of racing the machine."""

    def __init__(self, seconds: float, *, clock: Callable[[], float] = time.monotonic):
        self.seconds = seconds
        self.clock = clock
        self.ends = clock() + seconds

    def left(self) -> float:
        return self.ends - self.clock()

    def check(self) -> None:
        """Raise DeadlinePassed once the time is up."""
        if self.left() <= 0:
            raise DeadlinePassed(self.seconds)
