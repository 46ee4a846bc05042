"""PostgreSQL advisory locks: Quire's one namespace table and one way to take them.

Every advisory lock Quire takes is a single bigint key built by `lock_key`: a
fixed Quire prefix, the namespace, and 48 bits of the value. Two namespaces can
never meet, and neither can meet a lock some other software on the same
database takes (unless it picks the same prefix). A lock is either
transactional (`xact_lock`, released at commit or rollback) or a session lease
(`lease`, released on exit, or by the server when the holder's connection dies:
that is what lets recovery tell a dead worker's work from a live one's).
"""

import enum
import hashlib
import logging
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection

logger = logging.getLogger(__name__)

PREFIX = 0x51  # "Q"
VALUE_BITS = 48
VALUE_MASK = (1 << VALUE_BITS) - 1


class Namespace(enum.IntEnum):
    """What a lock protects; the value is part of every key."""

    # (channel, SHA-256): one of two simultaneous uploads of a file wins.
    UPLOAD_CONTENT = 1
    # A document's queueing: one queued or running ingestion per document.
    INGESTION_QUEUE = 2
    # A document's ingestion, held while a worker ingests it.
    INGESTION = 3
    # A task row a worker runs, held for the whole run (any task kind).
    TASK = 4
    # A source's sync requests: one queued or running sync per source.
    SOURCE_SYNC_QUEUE = 5
    # A source's sync, held while a worker syncs it.
    SOURCE_SYNC = 6
    # One sync row's run, so a sync whose task runs twice runs once.
    SOURCE_SYNC_RUN = 7


def lock_key(namespace: Namespace, value: int | str) -> int:
    """The signed bigint key of `value` in `namespace`. Integers (ids) below
    2**48 map one to one; anything else (a UUID's int, text) is folded to 48
    bits, where a collision only makes two holders wait for each other."""
    if isinstance(value, str) or not 0 <= value <= VALUE_MASK:
        digest = hashlib.blake2b(str(value).encode(), digest_size=VALUE_BITS // 8)
        value = int.from_bytes(digest.digest())
    # PREFIX < 0x80, so every key is a positive bigint.
    return (PREFIX << 56) | (int(namespace) << VALUE_BITS) | value


def xact_lock(namespace: Namespace, value: int | str) -> None:
    """Wait for and take the lock until the current transaction ends (call it
    inside `transaction.atomic()`)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [lock_key(namespace, value)])


@contextmanager
def lease(namespace: Namespace, value: int | str) -> Iterator[None]:
    """Hold the lock (waiting for it) on this connection while the block runs.
    A holder that dies loses it with its connection."""
    key = lock_key(namespace, value)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s)", [key])
    try:
        yield
    finally:
        _release(key)


@contextmanager
def try_lease(namespace: Namespace, value: int | str) -> Iterator[bool]:
    """As `lease`, without waiting: the block gets True and holds the lock, or
    False at once when another session holds it."""
    key = lock_key(namespace, value)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [key])
        (acquired,) = cursor.fetchone()
    if not acquired:
        yield False
        return
    try:
        yield True
    finally:
        _release(key)


def _release(key: int) -> None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [key])
    except Exception:
        # A lost connection has released the lock already.
        logger.warning("Could not release advisory lock %#x", key)


def try_xact_lock(namespace: Namespace, value: int | str) -> bool:
    """Take the lock until the current transaction ends if nobody holds it;
    False (without waiting) when someone does. A lease holder's own session
    would get it too, so ask from another connection."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_try_advisory_xact_lock(%s)", [lock_key(namespace, value)]
        )
        (acquired,) = cursor.fetchone()
    return acquired
