"""The admission on the event loop (documents.access.aadmit_pooled): the one
statement through its own async pool, the verdict in the loop when no ORM step
is needed, the same checks and refusals as admit()."""

import asyncio

import psycopg
import pytest
from django.db import OperationalError
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from documents.access import COMMAND_LINE, AccessDenied, aadmit_pooled, admission
from documents.access import pool as admission_pool
from documents.models import AuditEvent, RateLimitWindow
from documents.services.keys import create_api_key

# The pool's connections are its own: the rows must be committed.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def pool_on(settings):
    settings.MCP_ADMISSION_POOL_SIZE = 2
    yield
    admission_pool.forget()


@pytest.fixture
def thread_trips(monkeypatch):
    """The admissions and verdicts that went to a thread."""
    trips = []
    released, settle = admission.aadmit_released, admission._asettle_released

    async def counted_released(*args, **kwargs):
        trips.append("admit")
        return await released(*args, **kwargs)

    async def counted_settle(*args, **kwargs):
        trips.append("settle")
        return await settle(*args, **kwargs)

    monkeypatch.setattr(admission, "aadmit_released", counted_released)
    monkeypatch.setattr(admission, "_asettle_released", counted_settle)
    return trips


def run(*admissions):
    """Admit each (slug, raw_key) in one event loop; the outcomes (a Caller or
    the AccessDenied), the pool closed after."""

    async def main():
        outcomes = []
        try:
            for slug, raw_key in admissions:
                try:
                    outcomes.append(await aadmit_pooled(slug, raw_key, via="test"))
                except AccessDenied as refusal:
                    outcomes.append(refusal)
        finally:
            await admission_pool.close()
        return outcomes

    return asyncio.run(main())


def counted(api_key) -> int:
    return sum(
        RateLimitWindow.objects.filter(subject=f"key:{api_key.pk}").values_list(
            "count", flat=True
        )
    )


def test_after_the_first_admission_a_key_is_admitted_without_a_thread(
    make_channel, pool_on, thread_trips, steady_rate_window
):
    handbook = make_channel(
        "handbook", newest_sort=[{"field": "year", "direction": "desc"}]
    )
    new = create_api_key(actor=COMMAND_LINE, name="agent", channels=[handbook])
    first, second, third = run(*[("handbook", new.raw_key)] * 3)
    # The first notes the database (and opens a new window) in the thread.
    assert thread_trips == ["admit"]
    for caller in (first, second, third):
        assert caller.channel == handbook
        assert caller.api_key == new.api_key
    # Loaded as the ORM loads it: JSON as Python values, datetimes aware.
    assert third.channel.newest_sort == [{"field": "year", "direction": "desc"}]
    assert third.api_key.created_at == new.api_key.created_at
    assert counted(new.api_key) == 3


def test_refusals_from_the_pool_are_the_same_and_audited(
    make_channel, pool_on, thread_trips, steady_rate_window
):
    handbook, wiki = make_channel("handbook"), make_channel("wiki")
    new = create_api_key(actor=COMMAND_LINE, name="agent", channels=[handbook])
    outcomes = run(
        ("handbook", new.raw_key),  # notes the database
        ("wiki", new.raw_key),
        ("handbook", "qk_not-a-key"),
        ("handbook", None),
    )
    statuses = [getattr(outcome, "status", 200) for outcome in outcomes]
    assert statuses == [200, 403, 401, 401]
    # Each refusal settled in the thread, where the audit is written.
    assert thread_trips == ["admit", "settle", "settle", "settle"]
    refused = AuditEvent.objects.filter(action=AuditEvent.Action.AUTH_REFUSED)
    assert refused.count() == 3
    assert counted(new.api_key) == 1  # refused requests aren't counted
    assert wiki.slug == "wiki"


def test_the_rate_limit_refuses_from_the_pool(
    make_channel, pool_on, settings, steady_rate_window
):
    settings.MCP_RATE_LIMIT_PER_MINUTE = 2
    handbook = make_channel("handbook")
    new = create_api_key(actor=COMMAND_LINE, name="agent", channels=[handbook])
    outcomes = run(*[("handbook", new.raw_key)] * 3)
    assert [getattr(outcome, "status", 200) for outcome in outcomes] == [200, 200, 429]


def test_the_pools_count_does_not_wait_for_the_disk_and_is_seen_at_once(
    make_channel, pool_on, steady_rate_window
):
    """The pool's sessions commit the rate window without waiting for the
    disk (synchronous_commit off); Django's connection sees each count at once."""
    handbook = make_channel("handbook")
    new = create_api_key(actor=COMMAND_LINE, name="agent", channels=[handbook])

    async def main():
        seen = []
        try:
            for _ in range(3):
                await aadmit_pooled("handbook", new.raw_key, via="test")
                seen.append(await asyncio.to_thread(counted, new.api_key))
            pool = await admission_pool.current()
            async with pool.connection() as conn:
                setting = await (
                    await conn.execute("SHOW synchronous_commit")
                ).fetchone()
        finally:
            await admission_pool.close()
        return seen, setting[0]

    seen, setting = asyncio.run(main())
    assert setting == "off"
    assert seen == [1, 2, 3]


def test_each_connection_keeps_one_cursor_for_the_statement(
    make_channel, pool_on, steady_rate_window, monkeypatch
):
    """Admissions on one connection run on the cursor it keeps, not a new one
    per call; a closed cursor is replaced."""
    handbook = make_channel("handbook")
    new = create_api_key(actor=COMMAND_LINE, name="agent", channels=[handbook])
    used = []
    kept_cursor = admission_pool._Connection.kept_cursor

    def recorded(self):
        cursor = kept_cursor(self)
        used.append((self, cursor))
        return cursor

    monkeypatch.setattr(admission_pool._Connection, "kept_cursor", recorded)

    async def main():
        try:
            for _ in range(4):
                await aadmit_pooled("handbook", new.raw_key, via="test")
            pool = await admission_pool.current()
            async with pool.connection() as conn:
                kept = conn.kept_cursor()
                await kept.close()
                replaced = conn.kept_cursor()
        finally:
            await admission_pool.close()
        return kept, replaced

    kept, replaced = asyncio.run(main())
    admissions = used[:-2]  # the first admission notes the database (Django's)
    assert len(admissions) == 3
    connections = {id(conn) for conn, _ in admissions}
    assert len({id(cursor) for _, cursor in admissions}) == len(connections)
    assert replaced is not kept and not replaced.closed


def test_with_the_pool_off_every_admission_takes_the_thread(
    make_channel, settings, thread_trips, steady_rate_window
):
    settings.MCP_ADMISSION_POOL_SIZE = 0
    handbook = make_channel("handbook")
    new = create_api_key(actor=COMMAND_LINE, name="agent", channels=[handbook])
    outcomes = run(*[("handbook", new.raw_key)] * 2)
    assert [outcome.channel for outcome in outcomes] == [handbook, handbook]
    assert thread_trips == ["admit", "admit"]


class PoolWithoutConnections(AsyncConnectionPool):
    """The admission pool during an outage: getconn gives up (PoolTimeout), as
    the real one does after DATABASE_POOL_TIMEOUT, but without the wait."""

    def __init__(self):
        super().__init__("", open=False)
        self.asked = 0

    async def getconn(self, timeout=None):
        self.asked += 1
        raise PoolTimeout("couldn't get a connection after 10.00 sec")


@pytest.fixture
def pool_down(monkeypatch):
    down = PoolWithoutConnections()

    async def current():
        return down

    monkeypatch.setattr(admission_pool, "current", current)
    return down


def test_an_outage_is_raised_at_once_without_trying_djangos_connection(
    make_channel, pool_on, pool_down, thread_trips, steady_rate_window, monkeypatch
):
    """No connection from the pool is the outage itself: Django's
    OperationalError at once, not a second wait on Django's own connection."""
    handbook = make_channel("handbook")
    new = create_api_key(actor=COMMAND_LINE, name="agent", channels=[handbook])
    discarded = []

    async def discard():
        discarded.append(True)

    monkeypatch.setattr(admission, "_adiscard_broken_connections", discard)

    async def main():
        with pytest.raises(OperationalError):
            await aadmit_pooled("handbook", new.raw_key, via="test")

    asyncio.run(main())
    assert pool_down.asked == 1
    assert thread_trips == []
    assert counted(new.api_key) == 0
    # Django's pool was checked, so that what the outage broke is not reused.
    assert discarded == [True]


def test_a_connection_broken_mid_statement_is_tried_again_through_django(
    make_channel, pool_on, thread_trips, monkeypatch, steady_rate_window
):
    """A pooled connection PostgreSQL dropped (a restart) fails its statement;
    Django's path, which drops stale connections first, admits the call."""
    handbook = make_channel("handbook")
    new = create_api_key(actor=COMMAND_LINE, name="agent", channels=[handbook])
    run(("handbook", new.raw_key))  # notes the database
    thread_trips.clear()

    async def broken(pool, statement, params):
        raise psycopg.OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(admission_pool, "fetch_one", broken)
    (caller,) = run(("handbook", new.raw_key))
    assert caller.channel == handbook
    assert thread_trips == ["admit"]
    assert counted(new.api_key) == 2
