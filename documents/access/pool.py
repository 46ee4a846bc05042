"""The admission statement's own async connection pool, on the event loop.

An MCP call through the fast path (project.mcp_asgi) is admitted before its
body is read; through Django's connection that was a trip to the request's
thread and back, a tenth of a small call's CPU. Here the one statement runs on
an async psycopg connection from a small pool (MCP_ADMISSION_POOL_SIZE, 0 turns
it off), opened as Django opens its own: the same connection parameters (read
from the default database's live connection, so under the test runner it is the
test database), autocommit, JSON read as text, the session in UTC, and
`synchronous_commit` off (below). Unlike
Django's (client-side binding), the statement is prepared on the server (bound
parameters, no query text to quote and parse each time): half the client's CPU
of a fetch (0.65 -> 0.30 ms) and a quarter of its wait. A pooler in front of
PostgreSQL must keep prepared statements per connection (pgbouncer >= 1.21
with max_prepared_statements, or session pooling).

The statement's one write is the key's request count for the current minute
(the rate window). Waiting for that commit to reach the disk was most of the
statement's time, and the event loop's wait for it cost the process CPU as
well; with `synchronous_commit` off for these connections the count is visible
to every other connection at once, as before, and only a crash of PostgreSQL
itself can lose the last fraction of a second of counts (at most three times
`wal_writer_delay`): a key could then make that many more requests in that one
minute. Nothing else is written through this pool, and every refusal's audit,
the address's failures and the write quota go through Django's connection,
durable as before.

The pool belongs to the event loop that opened it: a different loop (a new
test's) opens its own after the old one is closed as far as it can be. The
server closes it at shutdown (project.asgi's lifespan handling), and
`close()` does so for tests.
"""

import asyncio

from django.conf import settings
from django.db import connections
from psycopg import AsyncConnection, AsyncCursor
from psycopg.types.string import TextLoader
from psycopg_pool import AsyncConnectionPool

_CONNINFO_KEYS = frozenset(
    {
        "dbname",
        "user",
        "password",
        "host",
        "port",
        "sslmode",
        "sslrootcert",
        "sslcert",
        "sslkey",
        "connect_timeout",
        "application_name",
        "options",
        "service",
        "passfile",
        "target_session_attrs",
    }
)

_params: dict | None = None
_pool: AsyncConnectionPool | None = None
_loop: asyncio.AbstractEventLoop | None = None


def learn(alias: str = "default") -> None:
    """Note the database's connection parameters, once, from Django's
    connection (called in a thread, where Django's connection lives)."""
    global _params
    if _params is None and settings.MCP_ADMISSION_POOL_SIZE > 0:
        params = connections[alias].get_connection_params()
        _params = {key: value for key, value in params.items() if key in _CONNINFO_KEYS}


def forget() -> None:
    """Forget the parameters (the database changed: a test database)."""
    global _params
    _params = None


class _Connection(AsyncConnection):
    """An admission connection, with one cursor kept for its statement: a new
    cursor per call set up its adapters (the parameters' dumpers, the columns'
    loaders) again each time, about a tenth of a millisecond of the fetch."""

    _kept: AsyncCursor | None = None

    def kept_cursor(self) -> AsyncCursor:
        if self._kept is None or self._kept.closed:
            self._kept = self.cursor()
        return self._kept


async def _configure(conn: AsyncConnection) -> None:
    conn.adapters.register_loader("jsonb", TextLoader)
    conn.adapters.register_loader("json", TextLoader)
    await conn.execute("SET TIME ZONE 'UTC'")
    await conn.execute("SET synchronous_commit = off")


async def current() -> AsyncConnectionPool | None:
    """This loop's pool, opened on first use; None when it is off or the
    database's parameters aren't known yet (the first admission goes through
    Django's connection and notes them)."""
    global _pool, _loop
    size = settings.MCP_ADMISSION_POOL_SIZE
    if size <= 0 or _params is None:
        return None
    loop = asyncio.get_running_loop()
    if _pool is not None and _loop is loop:
        return _pool
    if _pool is not None:  # another loop's: it can't be awaited from here
        _pool = None
    pool = AsyncConnectionPool(
        kwargs={**_params, "autocommit": True},
        connection_class=_Connection,
        min_size=1,
        max_size=size,
        timeout=settings.DATABASES["default"]["OPTIONS"]["pool"]["timeout"],
        configure=_configure,
        open=False,
        name="admission",
    )
    await pool.open()
    _pool, _loop = pool, loop
    return pool


async def fetch_one(pool: AsyncConnectionPool, statement: str, params: dict):
    """The statement's one row. getconn and putconn rather than
    `pool.connection()`: the context manager adds a commit (a no-op in
    autocommit, behind the connection's lock) and a generator-based context
    per call (88 -> 74 µs of CPU a fetch, timed in a loop). putconn does what
    matters on the way back: a broken connection, or one left mid-statement
    by a cancelled call, is discarded and replaced."""
    conn = await pool.getconn()
    try:
        cursor = conn.kept_cursor()
        await cursor.execute(statement, params, prepare=True)
        return await cursor.fetchone()
    finally:
        await pool.putconn(conn)


async def close() -> None:
    """Close this loop's pool (server shutdown, the end of a test)."""
    global _pool, _loop
    pool, _pool, _loop = _pool, None, None
    if pool is not None:
        await pool.close()
