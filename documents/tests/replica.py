"""A real streaming replica of the test database's server, for tests.

`pg_basebackup -R` from the primary (the embedded server, or the one
DATABASE_URL names) into a folder of its own, then a hot standby started from
the same PostgreSQL binaries on another port, listening on a Unix socket in
that folder. PostgreSQL's defaults (wal_level=replica, max_wal_senders=10) and
initdb's pg_hba.conf (local replication trusted) are all the primary needs.

`use_replica` makes a running standby a replica alias of this test process;
`Standby.url` is a DATABASE_REPLICA_URLS entry for a server the test starts.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
from django.conf import settings
from django.db import connection, connections

from documents import replicas

# Files of the primary's folder a standby must not inherit: the embedded
# server's list of its users, and the primary's own start options.
NOT_COPIED = (".handle_pids.json", "postmaster.opts")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _binary(name: str) -> str:
    folder = settings.POSTGRES_BIN_DIR
    return str(Path(folder) / name) if folder else name


class Standby:
    """A hot standby of the primary serving the test database."""

    def __init__(self) -> None:
        # Unix socket paths are short (107 bytes): a folder of its own in /tmp.
        self.folder = Path(tempfile.mkdtemp(prefix="quire-standby-"))
        self.data_dir = self.folder / "data"
        self.port = free_port()
        self.database = connection.settings_dict["NAME"]
        self.process: subprocess.Popen | None = None
        params = connection.get_connection_params()
        self.primary = {
            "host": str(params.get("host") or ""),
            "port": str(params.get("port") or 5432),
            "user": params.get("user") or "postgres",
        }
        # PostgreSQL refuses to run as root; as root, the embedded server runs
        # as the owner of its folder, and so does the standby.
        self.run_as = None
        if os.geteuid() == 0 and self.primary["host"].startswith("/"):
            owner = Path(self.primary["host"]).stat().st_uid
            self.run_as = pwd.getpwuid(owner).pw_name
            os.chown(self.folder, owner, -1)

    def create(self) -> None:
        """Copy the primary with pg_basebackup (-R writes standby.signal and
        primary_conninfo); a fast checkpoint so the copy starts at once."""
        subprocess.run(
            [
                _binary("pg_basebackup"),
                "-D",
                str(self.data_dir),
                "-R",
                "-X",
                "stream",
                "-c",
                "fast",
                "-h",
                self.primary["host"],
                "-p",
                self.primary["port"],
                "-U",
                self.primary["user"],
            ],
            check=True,
            capture_output=True,
            user=self.run_as,
            env={**os.environ, "PGPASSWORD": connection.settings_dict["PASSWORD"]},
        )
        for name in NOT_COPIED:
            (self.data_dir / name).unlink(missing_ok=True)
        self.data_dir.chmod(0o700)

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                _binary("postgres"),
                "-D",
                str(self.data_dir),
                "-p",
                str(self.port),
                "-k",
                str(self.folder),
                "-h",
                "",
            ],
            stdout=subprocess.DEVNULL,
            stderr=open(self.folder / "standby.log", "ab"),  # noqa: SIM115
            start_new_session=True,
            user=self.run_as,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    "the standby exited: "
                    + (self.folder / "standby.log").read_text()[-2000:]
                )
            try:
                with self.connect() as conn:
                    if conn.execute("SELECT pg_is_in_recovery()").fetchone()[0]:
                        return
            except psycopg.OperationalError:
                time.sleep(0.2)
        raise RuntimeError("the standby did not accept connections within 60 s")

    def stop(self) -> None:
        """Stop the standby at once (SIGQUIT: PostgreSQL's immediate shutdown,
        as a crash would leave it)."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(3)
            self.process.wait(timeout=30)

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    def connect(self) -> psycopg.Connection:
        """A connection of the test's own to the standby (to read its
        statistics or pause its replay), not one Quire routes."""
        return psycopg.connect(
            host=str(self.folder),
            port=self.port,
            dbname=self.database,
            user=self.primary["user"],
            autocommit=True,
        )

    def url(self) -> str:
        """The standby as a DATABASE_REPLICA_URLS entry."""
        return (
            f"postgres://{self.primary['user']}@{quote(str(self.folder), safe='')}"
            f":{self.port}/{self.database}"
        )

    def settings_dict(self) -> dict:
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": self.database,
            "USER": self.primary["user"],
            "HOST": str(self.folder),
            "PORT": str(self.port),
            "CONN_MAX_AGE": 0,
            "OPTIONS": {"connect_timeout": 2},
        }

    def resume_replay(self) -> None:
        """Resume a replay paused with pg_wal_replay_pause() (if it runs)."""
        if self.process is not None and self.process.poll() is None:
            with self.connect() as conn:
                conn.execute("SELECT pg_wal_replay_resume()")

    def table_scans(self, table: str) -> int:
        """Sequential and index scans of `table` counted by the standby itself
        (each server keeps its own statistics)."""
        with self.connect() as conn:
            conn.execute("SELECT pg_stat_clear_snapshot()")
            row = conn.execute(
                "SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) "
                "FROM pg_stat_user_tables WHERE relname = %s",
                [table],
            ).fetchone()
        return row[0] if row else 0

    def wait_for_replay(self, timeout: float = 30) -> None:
        """Until the standby has replayed everything the primary wrote so far."""
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_current_wal_lsn()::text")
            (target,) = cursor.fetchone()
        deadline = time.monotonic() + timeout
        with self.connect() as conn:
            while time.monotonic() < deadline:
                if conn.execute(
                    "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", [target]
                ).fetchone()[0]:
                    return
                time.sleep(0.1)
        raise RuntimeError(f"the standby did not replay {target} within {timeout} s")


@contextlib.contextmanager
def running_standby() -> Iterator[Standby]:
    standby = Standby()
    try:
        standby.create()
        standby.start()
        yield standby
    finally:
        standby.remove()


# The alias a test process gives the standby: a mirror of the test database,
# so the test runner neither creates nor flushes it. Tests that read through it
# list it: @pytest.mark.django_db(transaction=True, databases=REPLICA_DATABASES).
REPLICA_ALIAS = "replica_test"
REPLICA_DATABASES = ["default", REPLICA_ALIAS]


@contextlib.contextmanager
def replica_alias(standby: Standby) -> Iterator[str]:
    """REPLICA_ALIAS in this process's connections, for the block."""
    entry = {**standby.settings_dict(), "TEST": {"MIRROR": "default"}}
    connections.settings[REPLICA_ALIAS] = connections.configure_settings(
        {"default": connections.settings["default"], REPLICA_ALIAS: entry}
    )[REPLICA_ALIAS]
    try:
        yield REPLICA_ALIAS
    finally:
        with contextlib.suppress(Exception):
            connections[REPLICA_ALIAS].close()
        with contextlib.suppress(AttributeError):
            delattr(connections._connections, REPLICA_ALIAS)
        del connections.settings[REPLICA_ALIAS]


@contextlib.contextmanager
def use_replica() -> Iterator[str]:
    """REPLICA_ALIAS as the only replica Quire reads from, for the block."""
    previous = settings.DATABASE_REPLICAS
    settings.DATABASE_REPLICAS = [REPLICA_ALIAS]
    replicas.forget_states()
    try:
        yield REPLICA_ALIAS
    finally:
        settings.DATABASE_REPLICAS = previous
        replicas.forget_states()


@pytest.fixture(scope="module")
def standby(django_db_setup, django_db_blocker) -> Iterator[Standby]:
    """A running standby of the test database's server, known to this process
    as REPLICA_ALIAS, for a test module; a test that stops it starts it again."""
    with (
        django_db_blocker.unblock(),
        running_standby() as running,
        replica_alias(running),
    ):
        yield running
