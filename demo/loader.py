"""Loads the demo channel with its documents, an admin login and a fresh API key.

Idempotent: the channel is created once, documents are matched on their SHA-256
so a second run adds nothing (a demo file that changed replaces its older
version), and the admin password is kept in the data folder
so every run prints the same login. The plain API key is never stored, so each
run revokes the previous demo key and creates a new one.
"""

import hashlib
import json
import mimetypes
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.files import File

from documents.access import Actor
from documents.models import ApiKey, Channel, Document
from documents.services.channels import create_channel
from documents.services.documents import create_document, delete_document
from documents.services.ingestion import ingest_document
from documents.services.keys import create_api_key, revoke_api_key

DEMO_DIR = Path(__file__).resolve().parent
DEFINITION = DEMO_DIR / "channel.json"
ADMIN_USERNAME = "admin"
DEMO_KEY_NAME = "Demo key (make run)"
PASSWORD_FILE_NAME = "demo-admin.txt"
DEMO_ACTOR = Actor(via="demo")


@dataclass(frozen=True)
class DemoSite:
    channel: Channel
    documents: list[Document]
    username: str
    # None when the admin user exists with a password this loader did not set.
    password: str | None
    raw_key: str


def load_demo(
    *,
    definition: Path = DEFINITION,
    password_file: Path | None = None,
    log: Callable[[str], None] = lambda message: None,
) -> DemoSite:
    """Create (or find) the demo channel, ingest its documents synchronously so
    they are ready before any server starts, ensure the admin login and issue a
    new demo API key (revoking the previous one)."""
    spec = json.loads(definition.read_text(encoding="utf-8"))
    document_specs = spec.pop("documents")
    channel = _ensure_channel(spec, log)
    documents = [
        _ensure_document(channel, definition.parent / "documents", item, log)
        for item in document_specs
    ]
    password = _ensure_admin(password_file or settings.DATA_DIR / PASSWORD_FILE_NAME)
    raw_key = _rotate_demo_key(channel)
    return DemoSite(
        channel=channel,
        documents=documents,
        username=ADMIN_USERNAME,
        password=password,
        raw_key=raw_key,
    )


def _ensure_channel(spec: dict, log: Callable[[str], None]) -> Channel:
    channel = Channel.objects.filter(slug=spec["slug"]).first()
    if channel is None:
        channel = create_channel(**spec, actor=DEMO_ACTOR)
        log(f"Created the channel “{channel.name}” (/mcp/{channel.slug}).")
    return channel


def _ensure_document(
    channel: Channel, folder: Path, item: dict, log: Callable[[str], None]
) -> Document:
    path = folder / item["file"]
    sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
    # A demo file that changed since the last run replaces its older version.
    for outdated in Document.objects.filter(
        channel=channel, original_filename=path.name
    ).exclude(sha256=sha256):
        delete_document(document=outdated, actor=DEMO_ACTOR)
        log(f"Replacing {path.name} (the file changed)…")
    document = Document.objects.filter(channel=channel, sha256=sha256).first()
    if document is None:
        with path.open("rb") as handle:
            document = create_document(
                actor=DEMO_ACTOR,
                channel=channel,
                file=File(handle, name=path.name),
                filename=path.name,
                title=item.get("title", ""),
                metadata=item.get("metadata"),
                content_type=mimetypes.guess_type(path.name)[0],
                enqueue=False,
            )
    if document.status != Document.Status.READY:
        log(f"Ingesting {path.name}…")
        document = ingest_document(document_id=document.pk)
        if document.status != Document.Status.READY:
            log(f"  {path.name} failed: {document.status_reason}")
    return document


def _ensure_admin(password_file: Path) -> str | None:
    stored = (
        password_file.read_text(encoding="utf-8").strip()
        if password_file.exists()
        else ""
    )
    User = get_user_model()
    user = User.objects.filter(username=ADMIN_USERNAME).first()
    if user is None:
        password = stored or secrets.token_urlsafe(12)
        User.objects.create_superuser(ADMIN_USERNAME, email="", password=password)
        if not stored:
            password_file.parent.mkdir(parents=True, exist_ok=True)
            password_file.write_text(password + "\n", encoding="utf-8")
            os.chmod(password_file, 0o600)
        return password
    if stored and user.check_password(stored):
        return stored
    return None


def _rotate_demo_key(channel: Channel) -> str:
    for old in ApiKey.objects.filter(name=DEMO_KEY_NAME, revoked_at__isnull=True):
        revoke_api_key(actor=DEMO_ACTOR, api_key=old)
    return create_api_key(
        actor=DEMO_ACTOR, name=DEMO_KEY_NAME, channels=[channel]
    ).raw_key


def describe(site: DemoSite, base_url: str) -> list[str]:
    """The lines `make run` prints: admin URL and login, MCP URL, API key."""
    login = (
        f"{site.username} / {site.password}"
        if site.password
        else f"{site.username} (password changed since the demo set it)"
    )
    return [
        f"Admin: {base_url}/admin/",
        f"Login: {login}",
        f"MCP URL: {base_url}/mcp/{site.channel.slug}",
        f"API key: {site.raw_key}",
    ]
