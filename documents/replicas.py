"""Read replicas: which reads may go to a streaming standby, and which standby.

The rule is opt-in, by call site. A function decorated with `replica_read`
(search, listing, page reads) reads from a healthy replica; everything else
reads and writes the primary: every write, the admission statement (it counts
the request, so it must see the last one), and any read that must see a write
just made (the admin after a save, an upload's own status, a sync's
bookkeeping). Guessing by model would send the upload status or the sync's
lease check to a replica that has not replayed them yet; naming the safe sites
keeps the unsafe ones on the primary by default.

`replica_read_current` is for results cached under the channel's version (tool
schemas, answers): the replica is used only when it has replayed the channel's
row as the caller read it from the primary, so nothing older is cached as new.

A replica is healthy when it answers, is in recovery (a promoted standby no
longer follows the primary), and lags at most settings.REPLICA_MAX_LAG seconds:
none when it has replayed the primary's current WAL position, otherwise the
time since the last transaction it replayed. Each replica's health is measured
at most every REPLICA_CHECK_SECONDS (by `_clock`, which tests replace); one
that is down or lagging is skipped until a later check finds it well. A
connection error during a replica read marks it down and runs the read again on
the primary, so a replica's loss never fails a call.
"""

from __future__ import annotations

import functools
import itertools
import logging
import math
import threading
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass

from django.conf import settings
from django.db import (
    DEFAULT_DB_ALIAS,
    DatabaseError,
    InterfaceError,
    OperationalError,
    connections,
)

from documents.models import Channel

logger = logging.getLogger(__name__)

# Apps whose tables are read on the primary even inside a replica read: the
# database cache (answers) is written and read back by the same requests.
PRIMARY_ONLY_APPS = frozenset({"django_cache"})

_reading: ContextVar[str | None] = ContextVar("quire_replica_alias", default=None)
_clock: Callable[[], float] = time.monotonic
_turns = itertools.count()


@dataclass(frozen=True)
class ReplicaState:
    """One replica as last measured: reachable or not, and its lag in seconds
    (None when it did not answer, inf when it is behind with nothing replayed)."""

    alias: str
    checked_at: float
    reachable: bool
    lag: float | None

    @property
    def usable(self) -> bool:
        return (
            self.reachable
            and self.lag is not None
            and self.lag <= settings.REPLICA_MAX_LAG
        )


_states: dict[str, ReplicaState] = {}
_checking: dict[str, threading.Lock] = {}
_states_lock = threading.Lock()


class ReplicaRouter:
    """Django's database router for Quire: reads inside `replica_read` go to
    the replica it chose; every other read and every write go to the primary."""

    def db_for_read(self, model, **hints) -> str:
        alias = _reading.get()
        if alias is None or model._meta.app_label in PRIMARY_ONLY_APPS:
            return DEFAULT_DB_ALIAS
        return alias

    def db_for_write(self, model, **hints) -> str:
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1, obj2, **hints) -> bool:
        return True  # every alias holds the same rows

    def allow_migrate(self, db: str, app_label: str, **hints) -> bool:
        return db == DEFAULT_DB_ALIAS


def read_alias() -> str:
    """The alias the current read uses: the chosen replica inside a replica
    read, the primary otherwise."""
    return _reading.get() or DEFAULT_DB_ALIAS


def read_connection():
    """The connection for raw SQL on a replica-safe path (search legs)."""
    return connections[read_alias()]


def replica_read[**P, R](function: Callable[P, R]) -> Callable[P, R]:
    """Run `function` with its reads on a healthy replica (the primary when
    none is); a connection error there runs it again on the primary."""
    return _routed(function, current=False)


def replica_read_current[**P, R](function: Callable[P, R]) -> Callable[P, R]:
    """replica_read for a function whose first argument is a Channel read from
    the primary and whose result is cached under that channel's version: a
    replica that has not yet replayed that version is not used."""
    return _routed(function, current=True)


def _routed[**P, R](function: Callable[P, R], *, current: bool) -> Callable[P, R]:
    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        if _reading.get() is not None:
            return function(*args, **kwargs)
        alias = choose_replica()
        if alias is not None and current and not _has_replayed(alias, args[0]):
            alias = None
        if alias is None:
            return function(*args, **kwargs)
        token = _reading.set(alias)
        try:
            return function(*args, **kwargs)
        except (OperationalError, InterfaceError):
            logger.warning("Replica %s failed a read; reading the primary", alias)
            _mark_down(alias)
        finally:
            _reading.reset(token)
        return function(*args, **kwargs)

    return wrapper


def choose_replica() -> str | None:
    """A usable replica's alias, taking turns among them; None when there is
    none (no replica configured, or all down or lagging)."""
    usable = [alias for alias in settings.DATABASE_REPLICAS if _state(alias).usable]
    if not usable:
        return None
    return usable[next(_turns) % len(usable)]


def replica_states(*, fresh: bool = False) -> list[ReplicaState]:
    """Every configured replica's state (measured now with `fresh`), for
    readiness and metrics."""
    if fresh:
        return [_store(measure(alias)) for alias in settings.DATABASE_REPLICAS]
    return [_state(alias) for alias in settings.DATABASE_REPLICAS]


def forget_states() -> None:
    """Drop every measured state, so the next read measures again."""
    with _states_lock:
        _states.clear()


def _state(alias: str) -> ReplicaState:
    """The cached state while it is recent; otherwise measured now by one
    thread, while others keep the previous state (unusable if none)."""
    state = _states.get(alias)
    if (
        state is not None
        and _clock() - state.checked_at < settings.REPLICA_CHECK_SECONDS
    ):
        return state
    with _states_lock:
        lock = _checking.setdefault(alias, threading.Lock())
    if not lock.acquire(blocking=False):
        return state or ReplicaState(alias, _clock(), False, None)
    try:
        return _store(measure(alias))
    finally:
        lock.release()


def _store(state: ReplicaState) -> ReplicaState:
    with _states_lock:
        _states[state.alias] = state
    return state


def _mark_down(alias: str) -> None:
    _store(ReplicaState(alias, _clock(), False, None))
    _close(alias)


def measure(alias: str) -> ReplicaState:
    """Ask the primary for its WAL position, then the replica how far it has
    replayed: caught up is no lag; behind, the lag is the time since the last
    transaction it replayed (the standard pg_last_xact_replay_timestamp
    measure)."""
    checked_at = _clock()
    try:
        with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
            cursor.execute("SELECT pg_current_wal_lsn()::text")
            (primary_lsn,) = cursor.fetchone()
        with connections[alias].cursor() as cursor:
            cursor.execute(
                "SELECT pg_is_in_recovery(), "
                "pg_last_wal_replay_lsn() >= %s::pg_lsn, "
                "EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp())",
                [primary_lsn],
            )
            in_recovery, caught_up, since_replay = cursor.fetchone()
    except DatabaseError:
        logger.warning("Replica %s is unreachable", alias)
        _close(alias)
        return ReplicaState(alias, checked_at, False, None)
    if not in_recovery:
        logger.warning("Replica %s is not in recovery; not used", alias)
        return ReplicaState(alias, checked_at, True, None)
    if caught_up:
        lag = 0.0
    elif since_replay is None:
        lag = math.inf
    else:
        lag = max(0.0, float(since_replay))
    return ReplicaState(alias, checked_at, True, lag)


def _has_replayed(alias: str, channel: Channel) -> bool:
    """Whether the replica holds the channel's row at least as new as the
    caller's copy (read from the primary)."""
    try:
        return (
            Channel.objects.using(alias)
            .filter(
                pk=channel.pk,
                corpus_version__gte=channel.corpus_version,
                updated_at__gte=channel.updated_at,
            )
            .exists()
        )
    except DatabaseError:
        _mark_down(alias)
        return False


def _close(alias: str) -> None:
    try:
        connections[alias].close()
    except DatabaseError:
        pass
