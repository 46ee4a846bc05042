"""A throwaway Quire stack for the load and fault scripts.

Each script gets its own data folder (.data/bench-<name>: its own embedded
PostgreSQL, media and secret key), so restarting PostgreSQL or killing a worker
never touches the development server or anyone's test database. `boot(name)`
points this process at that folder and sets Django up; `start_web` and
`start_worker` run uvicorn and `manage.py ingest_worker` as child processes with
the same environment.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from demo.web import uvicorn_command  # noqa: E402

SHARED_DATA = ROOT.parent / "shared" / "data"  # the workplace's test data
MODERN = "2026-07-28"


def boot(name: str, **settings: str) -> dict[str, str]:
    """Use .data/bench-<name> for everything, set Django up, migrate; returns
    the environment for child processes."""
    data_dir = ROOT / ".data" / f"bench-{name}"
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "project.settings",
            "QUIRE_DATA_DIR": str(data_dir),
            "LOG_LEVEL": "WARNING",
            **settings,
        }
    )
    os.environ.pop("DATABASE_URL", None)
    os.environ.pop("QUIRE_TEST_DATABASE", None)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("createcachetable", verbosity=0)
    return dict(os.environ)


def postgres_data_dir() -> Path:
    return Path(os.environ["QUIRE_DATA_DIR"]) / "postgres"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_web(env: dict[str, str], *, workers: int, port: int) -> subprocess.Popen:
    """uvicorn with `workers` processes on 127.0.0.1:port, once it answers."""
    process = subprocess.Popen(
        uvicorn_command(
            port=port,
            workers=workers,
            options=("--log-level", "warning", "--no-access-log"),
        ),
        cwd=ROOT,
        env=env,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"uvicorn exited with {process.returncode}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/admin/login/", timeout=2)
            return process
        except (urllib.error.URLError, OSError):
            time.sleep(0.3)
    stop(process)
    raise RuntimeError("uvicorn did not start in time")


def start_worker(env: dict[str, str], *extra: str) -> subprocess.Popen:
    """`manage.py ingest_worker` (recovery at start), in its own process group."""
    return subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "manage.py"),
            "ingest_worker",
            "--no-reload",
            "--no-startup-delay",
            "--interval",
            "0.2",
            *extra,
        ],
        cwd=ROOT,
        env=env,
        start_new_session=True,
    )


def stop(process: subprocess.Popen, sig: int = signal.SIGINT) -> None:
    """Stop a child and its process group (SIGINT, then SIGKILL after 15 s)."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, sig)
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        pass


def mcp_call(
    url: str, key: str, method: str, params: dict | None = None, timeout: float = 30
) -> tuple[int, dict, float]:
    """One 2026-07-28 JSON-RPC call: (HTTP status, reply, seconds)."""
    params = dict(params or {})
    params["_meta"] = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "Authorization": f"Bearer {key}",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": method,
    }
    if method == "tools/call":
        headers["Mcp-Name"] = params["name"]
    request = urllib.request.Request(url, body.encode(), headers, method="POST")
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, raw = error.code, error.read()
    elapsed = time.monotonic() - started
    try:
        reply = json.loads(raw)
    except ValueError:
        reply = {"raw": raw[:300].decode(errors="replace")}
    return status, reply, elapsed
