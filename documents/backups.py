"""Backups that restore: the database and the stored files, consistent with
each other (`manage.py backup <dir>`, `manage.py restore <dir>`).

The database is dumped by pg_dump (custom format) from the PostgreSQL binaries
the embedded server ships, or the operator's (POSTGRES_BIN_DIR), inside a
snapshot this process exports: the files copied are exactly the ones the dumped
rows name (documents' originals, revisions' originals, page images), read
through the configured storage, so a file uploaded after the snapshot is not
copied and a row in the dump never names a missing file. A file deleted between
the snapshot and its copy (its document was deleted meanwhile) makes the backup
start again, at most BACKUP_ATTEMPTS times.

A backup folder holds `manifest.json`, `database.dump` and `files/`. Restoring
needs an installation with no channels and no documents (a fresh one, migrated
or not): the dump replaces its tables, the files are written through its
storage under the same names.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from django.apps import apps
from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import connection, models, transaction
from django.utils import timezone

from documents.models import Channel, Document

MANIFEST = "manifest.json"
DUMP = "database.dump"
FILES = "files"
FORMAT = 1
BACKUP_ATTEMPTS = 3


class BackupError(Exception):
    """A backup or restore that cannot go on; the message says why."""


@dataclass
class Summary:
    files: int
    bytes: int
    folder: Path


def pg_program(name: str) -> str:
    folder = settings.POSTGRES_BIN_DIR
    return str(Path(folder) / name) if folder else name


def _pg_environment() -> dict[str, str]:
    """libpq's variables for the configured database (as Django connects)."""
    connection.ensure_connection()
    params = connection.get_connection_params()
    environment = dict(os.environ)
    for key, variable in (
        ("host", "PGHOST"),
        ("port", "PGPORT"),
        ("user", "PGUSER"),
        ("password", "PGPASSWORD"),
        ("dbname", "PGDATABASE"),
    ):
        if params.get(key):
            environment[variable] = str(params[key])
    return environment


def stored_names() -> list[str]:
    """Every stored file a row names, in any model's FileField."""
    names: set[str] = set()
    for model in apps.get_models():
        for field in model._meta.get_fields():
            if isinstance(field, models.FileField):
                names.update(
                    model._default_manager.exclude(**{field.name: ""})
                    .values_list(field.name, flat=True)
                    .iterator()
                )
    return sorted(name for name in names if name)


def _safe_path(root: Path, name: str) -> Path:
    """The path of a stored name under `root`; a name that climbs out is
    refused (a manifest from elsewhere must not write outside the folder)."""
    parts = PurePosixPath(name).parts
    if not parts or name.startswith("/") or ".." in parts:
        raise BackupError(f"{name!r} is not a stored file name.")
    return root.joinpath(*parts)


def backup(folder: Path, *, database_only: bool = False) -> Summary:
    """Write a backup into `folder` (created; it must be empty)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if any(folder.iterdir()):
        raise BackupError(f"{folder} is not empty; give a new folder.")
    for _ in range(BACKUP_ATTEMPTS):
        missing = _attempt(folder, database_only=database_only)
        if missing is None:
            return _summary(folder)
        for child in folder.iterdir():
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    raise BackupError(
        f"{missing} was deleted while the backup copied it, {BACKUP_ATTEMPTS} "
        "times; try again when fewer documents are being deleted."
    )


def _attempt(folder: Path, *, database_only: bool) -> str | None:
    """One try; the name of a file that vanished, or None when done."""
    environment = _pg_environment()
    files_root = folder / FILES
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            cursor.execute("SELECT pg_export_snapshot()")
            (snapshot,) = cursor.fetchone()
        dumped = subprocess.run(
            [
                pg_program("pg_dump"),
                "--format=custom",
                "--no-owner",
                "--no-privileges",
                f"--snapshot={snapshot}",
                f"--file={folder / DUMP}",
            ],
            env=environment,
            capture_output=True,
            text=True,
        )
        if dumped.returncode != 0:
            raise BackupError(f"pg_dump failed: {dumped.stderr.strip()}")
        names = [] if database_only else stored_names()
    entries = []
    for name in names:
        target = _safe_path(files_root, name)
        target.parent.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256()
        try:
            with default_storage.open(name, "rb") as source, open(target, "wb") as out:
                for block in iter(lambda: source.read(1024 * 1024), b""):
                    digest.update(block)
                    out.write(block)
        except FileNotFoundError:
            return name
        entries.append(
            {"name": name, "size": target.stat().st_size, "sha256": digest.hexdigest()}
        )
    manifest = {
        "format": FORMAT,
        "created_at": timezone.now().isoformat(),
        "database": DUMP,
        "database_only": database_only,
        "files": entries,
    }
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1))
    return None


def _summary(folder: Path) -> Summary:
    manifest = read_manifest(folder)
    return Summary(
        files=len(manifest["files"]),
        bytes=sum(entry["size"] for entry in manifest["files"]),
        folder=folder,
    )


def read_manifest(folder: Path) -> dict:
    try:
        manifest = json.loads((Path(folder) / MANIFEST).read_text())
    except (OSError, ValueError) as exc:
        raise BackupError(f"{folder} holds no readable {MANIFEST} ({exc}).") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BackupError(f"{folder}/{MANIFEST} is not a Quire backup (format 1).")
    return manifest


def _installation_is_empty() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass('documents_channel') IS NOT NULL")
        (migrated,) = cursor.fetchone()
    if not migrated:
        return True
    return not Channel.objects.exists() and not Document.objects.exists()


def restore(folder: Path) -> Summary:
    """Restore the backup in `folder` into this (empty) installation."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    entries = manifest.get("files") or []
    for entry in entries:  # every file present and intact before anything changes
        path = _safe_path(folder / FILES, entry["name"])
        if not path.is_file() or _sha256(path) != entry["sha256"]:
            raise BackupError(f"{entry['name']} is missing or changed in {folder}.")
    if not _installation_is_empty():
        raise BackupError(
            "This installation has channels or documents; restore into a fresh "
            "one (an empty database and storage)."
        )
    environment = _pg_environment()
    restored = subprocess.run(
        [
            pg_program("pg_restore"),
            "--clean",
            "--if-exists",
            "--no-owner",
            "--no-privileges",
            "--single-transaction",
            f"--dbname={environment['PGDATABASE']}",
            str(folder / DUMP),
        ],
        env=environment,
        capture_output=True,
        text=True,
    )
    if restored.returncode != 0:
        raise BackupError(f"pg_restore failed: {restored.stderr.strip()}")
    for entry in entries:
        path = _safe_path(folder / FILES, entry["name"])
        if default_storage.exists(entry["name"]):
            default_storage.delete(entry["name"])
        with open(path, "rb") as handle:
            saved = default_storage.save(entry["name"], File(handle))
        if saved != entry["name"]:
            raise BackupError(f"The storage renamed {entry['name']} to {saved}.")
    return _summary(folder)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1024 * 1024), b""):
            digest.update(block)
    return digest.hexdigest()
