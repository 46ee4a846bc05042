"""A real uvicorn server for client tests, on the pytest test database.

The data it serves (the demo channel, loaded by demo.loader like `make run`
does, and the conformance channel) is committed, so the server's own
connections see it; it is deleted again when the session ends.
"""

import os
import secrets
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
from django.db import connection

from demo.web import uvicorn_command
from mcp_endpoint.tests.conformance_fixtures import CONFORMANCE_SLUG

REPO = Path(__file__).resolve().parents[2]
CONFORMANCE_KEY_NAME = "conformance suites"


def media_storages(media: Path) -> dict:
    """STORAGES for a test that writes files a live server (or the test) reads
    back: the uploads in `media`, static files served as they are."""
    return {
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": media},
        },
        "staticfiles": {
            "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        },
    }


@dataclass
class LiveServer:
    base_url: str
    demo_slug: str
    demo_key: str
    conformance_key: str
    # Where its stored files are: another server on the same data serves them too.
    media: Path | None = None

    @property
    def demo_url(self) -> str:
        return f"{self.base_url}/mcp/{self.demo_slug}"

    @property
    def conformance_url(self) -> str:
        return f"{self.base_url}/mcp/{CONFORMANCE_SLUG}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_environment(media_root: Path, conformance_key: str) -> dict[str, str]:
    """The test process's environment, pointed at the test database."""
    env = dict(os.environ)
    name = connection.settings_dict["NAME"]
    if env.get("DATABASE_URL"):
        parts = urlsplit(env["DATABASE_URL"])
        env["DATABASE_URL"] = urlunsplit(parts._replace(path=f"/{name}"))
    else:
        env["QUIRE_DATABASE_NAME"] = name
    env.update(
        MEDIA_ROOT=str(media_root),
        QUIRE_CONFORMANCE_KEY=conformance_key,
        MCP_RATE_LIMIT_PER_MINUTE="100000",
        DJANGO_SETTINGS_MODULE="project.settings",
        PYTHONPATH=str(REPO),
    )
    return env


def start_server(
    env: dict[str, str], workers: int = 2, port: int | None = None
) -> tuple[subprocess.Popen, str]:
    """uvicorn on `port` (a free one by default), once it answers."""
    port = port or free_port()
    process = subprocess.Popen(
        uvicorn_command(
            "mcp_endpoint.tests.live_app:application",
            port=port,
            workers=workers,
            options=("--log-level", "warning"),
        ),
        cwd=REPO,
        env=env,
        start_new_session=True,
    )
    base_url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"uvicorn exited with {process.returncode}")
        try:
            if httpx.get(f"{base_url}/mcp/{CONFORMANCE_SLUG}", timeout=2).status_code:
                return process, base_url
        except httpx.HTTPError:
            time.sleep(0.3)
    stop_server(process)
    raise RuntimeError("uvicorn did not start within 90 s")


def stop_server(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, 15)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait()


def new_conformance_key() -> str:
    return "qk_" + secrets.token_urlsafe(24)


def ensure_conformance_channel(raw_key: str) -> None:
    """The conformance channel, opened by `raw_key` (older conformance keys go)."""
    from documents.access import digest_key
    from documents.models import ApiKey, Channel
    from documents.services.channels import create_channel

    channel = Channel.objects.filter(slug=CONFORMANCE_SLUG).first()
    if channel is None:
        channel = create_channel(slug=CONFORMANCE_SLUG, name="Conformance")
    ApiKey.objects.filter(name=CONFORMANCE_KEY_NAME).delete()
    key = ApiKey.objects.create(
        name=CONFORMANCE_KEY_NAME, prefix=raw_key[:10], digest=digest_key(raw_key)
    )
    key.channels.set([channel])


def create_live_data(conformance_key: str, password_file: Path) -> tuple[str, str]:
    """The demo channel (as `make run` loads it) and the conformance channel;
    returns (demo slug, demo key)."""
    from demo.loader import load_demo

    site = load_demo(password_file=password_file)
    ensure_conformance_channel(conformance_key)
    return site.channel.slug, site.raw_key


def committed_marks() -> dict:
    """The newest audit event and rate-limit window before a live server
    starts: what the server commits after them is its own (the tests beside it
    run in transactions that are rolled back)."""
    from django.db.models import Max

    from documents.models import AuditEvent, RateLimitWindow

    return {
        model: model.objects.aggregate(newest=Max("pk"))["newest"] or 0
        for model in (AuditEvent, RateLimitWindow)
    }


def delete_live_data(demo_slug: str, marks: dict) -> None:
    """The live data, and the audit events and counts its server committed
    after `marks` (committed_marks): tests elsewhere count events and
    failures, and must not find the server's."""
    from django.contrib.auth import get_user_model

    from documents.models import ApiKey, Channel

    for model, newest in marks.items():
        model.objects.filter(pk__gt=newest).delete()
    channels = Channel.objects.filter(slug__in=[demo_slug, CONFORMANCE_SLUG])
    ApiKey.objects.filter(channels__in=channels).delete()
    channels.delete()
    get_user_model().objects.filter(username="admin").delete()
