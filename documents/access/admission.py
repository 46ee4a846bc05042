"""Who may call: channel, key, scope and limits, in one round trip.

Every MCP call and REST request begins here (`admit`): look up the channel it
names, check the API key against it and its scopes, count the request against
the key's limit and check that the client's address isn't throttled after
failed authentications. Through the ORM that was several queries, and compiling
them was the largest single cost of a small MCP call (tools/list); here it is
one statement, built once from the models' metadata. Refusals are recorded in
the audit trail and count against the client's address.
"""

import hmac
from contextlib import contextmanager
from functools import cache

import psycopg
from asgiref.sync import sync_to_async
from django.db import OperationalError, close_old_connections, connection
from django.utils import timezone
from psycopg_pool import PoolClosed, PoolTimeout

from documents.access import audit, rows
from documents.access import pool as admission_pool
from documents.access.caller import Caller
from documents.access.keys import KEY_PREFIX, digest_key
from documents.access.principals import AccessDenied, Scope
from documents.access.tokens import admit_token
from documents.access.windows import (
    Window,
    clear_old_windows,
)
from documents.models import AddressWindow, ApiKey, Channel, RateLimitWindow
from documents.telemetry import metrics


def _columns(model, alias: str) -> str:
    fields = model._meta.concrete_fields
    return ", ".join(f'{alias}."{field.column}"' for field in fields)


@cache
def _statement() -> str:
    through = ApiKey._meta.get_field("channels")
    windows = RateLimitWindow._meta.db_table
    failures = AddressWindow._meta.db_table
    return f"""
        WITH throttle AS (
            SELECT COALESCE((
                SELECT count FROM {failures}
                WHERE address = %(address)s AND bucket = %(failures_bucket)s
                  AND window_start = %(window_start)s
            ), 0) AS failures
        ), channel AS (
            SELECT {_columns(Channel, "c")} FROM {Channel._meta.db_table} c
            WHERE c.slug = %(slug)s
        ), api_key AS (
            SELECT {_columns(ApiKey, "k")}, EXISTS (
                SELECT 1 FROM {through.m2m_db_table()} kc, channel
                WHERE kc.{through.m2m_column_name()} = k.id
                  AND kc.{through.m2m_reverse_name()} = channel.id
            ) AS opens_channel
            FROM {ApiKey._meta.db_table} k
            WHERE k.digest = %(digest)s
        ), counted AS (
            INSERT INTO {windows} (subject, bucket, window_start, count)
            SELECT 'key:' || id, %(bucket)s, %(window_start)s, 1
            FROM api_key, throttle
            WHERE %(counting)s AND throttle.failures <= %(failure_limit)s
              AND (opens_channel OR %(slug)s IS NULL)
              AND revoked_at IS NULL
              AND (expires_at IS NULL OR expires_at > %(now)s)
            ON CONFLICT (subject, bucket, window_start)
            DO UPDATE SET count = {windows}.count + 1
            RETURNING count
        )
        SELECT throttle.failures, api_key.*, (SELECT count FROM counted), channel.*
        FROM throttle LEFT JOIN api_key ON TRUE LEFT JOIN channel ON TRUE
    """


def admit(
    channel_slug: str | None,
    raw_key: str | None,
    *,
    scope: str = Scope.READ,
    via: str,
    address: str = "",
    resource: str | None = None,
) -> Caller:
    """The caller admitted to the channel: the active key that opens it with
    `scope`, the request counted against the key's rate limit (and a write
    against its hourly quota).

    Raises AccessDenied: 401 when the key is missing, unknown, revoked or
    expired; 403 when it doesn't open the channel or lacks the scope; 429 when
    the key is over its limit or the address is throttled after too many failed
    authentications. With channel_slug=None only the key is checked (the REST
    channel list).

    A credential that isn't an API key is taken for an OAuth access token
    (documents.access.tokens), accepted only for `resource`, the channel's MCP
    URL it was issued for.
    """
    with _refusals_counted(via):
        return _admit(
            channel_slug,
            raw_key,
            scope=scope,
            via=via,
            address=address,
            resource=resource,
        )


@contextmanager
def _refusals_counted(door: str):
    """A refusal raised inside is counted in the metrics for `door`."""
    try:
        yield
    except AccessDenied as refusal:
        metrics.observe_refusal(door=door, status=refusal.status, error=refusal.error)
        raise


def _admit(
    channel_slug: str | None,
    raw_key: str | None,
    *,
    scope: str = Scope.READ,
    via: str,
    address: str = "",
    resource: str | None = None,
) -> Caller:
    if raw_key and not raw_key.startswith(KEY_PREFIX):
        return admit_token(
            channel_slug,
            raw_key,
            resource=resource,
            scope=scope,
            via=via,
            address=address,
        )
    prepared = _Prepared(channel_slug, raw_key, address)
    with connection.cursor() as cursor:
        cursor.execute(_statement(), prepared.params)
        row = cursor.fetchone()
    return _settle(row, prepared, scope=scope, via=via, address=address)


class NeedsThread(Exception):
    """Raised by _settle(in_loop=True) before its first step that needs the ORM
    (an audit record, clearing old windows, the write quota, noting the key's
    use): nothing has been written yet, so the caller settles again in a thread."""


class _Prepared:
    """The statement's parameters, and what the verdict needs of them."""

    __slots__ = ("channel_slug", "digest", "failures", "params", "raw_key", "requests")

    def __init__(self, channel_slug: str | None, raw_key: str | None, address: str):
        self.channel_slug, self.raw_key = channel_slug, raw_key
        self.digest = digest_key(raw_key) if raw_key else ""
        self.requests = Window.requests()
        self.failures = Window.failures()
        self.params = {
            "address": address,
            "slug": channel_slug,
            "digest": self.digest,
            "bucket": RateLimitWindow.Bucket.REQUESTS,
            "failures_bucket": AddressWindow.Bucket.FAILURES,
            "window_start": self.requests.start,
            "counting": self.requests.counting,
            "failure_limit": self.failures.limit if self.failures.counting else 2**31,
            "now": self.requests.now,
        }


def _settle(
    row,
    prepared: _Prepared,
    *,
    scope: str,
    via: str,
    address: str,
    in_loop: bool = False,
) -> Caller:
    """The admission's verdict from the statement's row: every check, in order.
    With in_loop (the event loop, no ORM) it raises NeedsThread before any step
    that needs the ORM."""
    channel_slug, raw_key = prepared.channel_slug, prepared.raw_key
    requests, failures = prepared.requests, prepared.failures
    failure_count = row[0]
    if failures.exceeded(failure_count):
        raise AccessDenied.over_limit(
            "Too many failed authentications from this address", failures
        )
    size = len(ApiKey._meta.concrete_fields)
    api_key = rows.instance(ApiKey, row[1 : 1 + size]) if row[1] is not None else None
    opens_channel, count = row[1 + size], row[2 + size]
    channel_values = row[3 + size :]
    channel = rows.instance(Channel, channel_values) if channel_values[0] else None
    caller = Caller(via=via, address=address, api_key=api_key)
    refusal = _refusal(raw_key, prepared.digest, api_key, requests)
    if refusal is None and channel is not None and not opens_channel:
        refusal = AccessDenied("This API key does not open this channel.", status=403)
    if refusal is None and scope not in caller.granted_scopes():
        refusal = AccessDenied(
            f"This API key does not have the '{Scope(scope).value}' scope; ask an "
            f"administrator for a key with '{Scope(scope).value}' access.",
            status=403,
            missing_scope=scope,
        )
    if refusal is not None:
        if in_loop:
            raise NeedsThread
        detail = str(refusal)
        if channel is None and channel_slug:
            detail += f" (channel {channel_slug!r})"
        audit.record_refusal(
            refusal, actor=caller.actor, channel=channel, detail=detail
        )
        raise refusal
    if count is not None:
        if count == 1:
            if in_loop:
                raise NeedsThread
            clear_old_windows(subject=caller.subject, window=requests)
        if requests.exceeded(count):
            raise AccessDenied.over_limit("Rate limit reached", requests)
    if scope == Scope.WRITE and channel is not None:
        if in_loop:
            raise NeedsThread
        over_quota = caller.write_refusal()
        if over_quota is not None:
            raise over_quota
    if _use_to_note(api_key, requests.now):
        if in_loop:
            raise NeedsThread
        _note_use(api_key, requests.now)
    return caller.admitted(channel, scope)


aadmit = sync_to_async(admit)


def admit_released(channel_slug: str | None, raw_key: str | None, **options) -> Caller:
    """admit() between two close_old_connections(), as Django brackets a request:
    a connection PostgreSQL dropped (a restart) is never reused, and the one used
    goes back to the pool at once. The MCP fast path (project.mcp_asgi) admits
    with this in its one trip to the request's thread, so a call that needs no
    other SQL (tools/list) makes no second trip to give its connection back."""
    close_old_connections()
    try:
        return admit(channel_slug, raw_key, **options)
    finally:
        admission_pool.learn()
        close_old_connections()


aadmit_released = sync_to_async(admit_released)


async def aadmit_pooled(
    channel_slug: str | None,
    raw_key: str | None,
    *,
    scope: str = Scope.READ,
    via: str,
    address: str = "",
    resource: str | None = None,
) -> Caller:
    """admit() from the event loop without a trip to a thread: the one
    statement through documents.access.pool, and the verdict here when it needs
    no ORM step (a refusal's audit, a new window, the write quota, noting the
    key's use: those settle in the request's thread, from the same row). Tokens,
    no pool (off, or before the first admission noted the database), and a
    connection that broke mid-statement take aadmit_released; no connection
    within the pool's timeout (an outage) raises Django's OperationalError at
    once, which the MCP view answers as the outage (503, -32603)."""
    options = {"scope": scope, "via": via, "address": address, "resource": resource}
    pool = await admission_pool.current()
    if pool is None or (raw_key and not raw_key.startswith(KEY_PREFIX)):
        return await aadmit_released(channel_slug, raw_key, **options)
    prepared = _Prepared(channel_slug, raw_key, address)
    try:
        row = await admission_pool.fetch_one(pool, _statement(), prepared.params)
    except (PoolTimeout, PoolClosed) as exc:
        # No connection within the pool's timeout: PostgreSQL is down. This is
        # the outage already; Django's connection would wait as long again
        # before saying so (postgres_restart.py: 14.4 s for the slowest call).
        # Django's pool still holds the connections the outage broke: dropped
        # now, or the first calls after the restart would fail on them.
        await _adiscard_broken_connections()
        raise OperationalError("The admission pool has no connection.") from exc
    except psycopg.Error:
        # A connection that broke mid-statement (PostgreSQL restarted under
        # it): Django's path drops the stale connection and tries again.
        return await aadmit_released(channel_slug, raw_key, **options)
    try:
        with _refusals_counted(via):
            return _settle(
                row, prepared, scope=scope, via=via, address=address, in_loop=True
            )
    except NeedsThread:
        return await _asettle_released(
            row, prepared, scope=scope, via=via, address=address
        )


def _discard_broken_connections() -> None:
    """Test the idle connections of Django's pool and discard those that fail
    (psycopg_pool's check). Django's own path did this by the way, when an
    outage's admissions still went through it and failed on them."""
    pool = connection.pool
    if pool is not None and not pool.closed:
        pool.check()


_adiscard_broken_connections = sync_to_async(
    _discard_broken_connections, thread_sensitive=False
)


def _settle_released(row, prepared: _Prepared, **options) -> Caller:
    close_old_connections()
    try:
        with _refusals_counted(options["via"]):
            return _settle(row, prepared, **options)
    finally:
        close_old_connections()


_asettle_released = sync_to_async(_settle_released)


def authenticate_key(raw_key: str | None, *, via: str, address: str = "") -> ApiKey:
    """The active key for raw_key (AccessDenied otherwise), counted like any
    request; for calls that name no channel."""
    return admit(None, raw_key, via=via, address=address).api_key


def _refusal(
    raw_key: str | None, digest: str, api_key: ApiKey | None, window: Window
) -> AccessDenied | None:
    if not raw_key:
        return AccessDenied(
            "An API key is required.", status=401, credentials_given=False
        )
    # The lookup is by digest (an index hit); compare again in constant time so
    # the outcome never depends on how much of a guessed key matched.
    if api_key is None or not hmac.compare_digest(api_key.digest, digest):
        return AccessDenied("Unknown API key.", status=401)
    if api_key.revoked_at is not None:
        return AccessDenied("This API key has been revoked.", status=401)
    if api_key.expires_at is not None and api_key.expires_at <= window.now:
        return AccessDenied("This API key has expired.", status=401)
    return None


def _use_to_note(api_key: ApiKey, now) -> bool:
    # At most once a minute per key, to keep hot paths free of writes.
    return (
        api_key.last_used_at is None
        or (now - api_key.last_used_at).total_seconds() > 60
    )


def _note_use(api_key: ApiKey, now) -> None:
    ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=timezone.now())
    api_key.last_used_at = now
