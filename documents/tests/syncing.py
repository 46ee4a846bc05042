"""What the sync tests share: syncing a source as `manage.py sync_source`
does (in this process), and reading the channel afterwards."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from django.core.management import call_command
from django_tasks_db.management.commands import db_worker

from documents.access import COMMAND_LINE
from documents.management.commands import ingest_worker
from documents.models import AuditEvent, Document, Source, SourceSync
from documents.services.sources import request_sync, save_source
from documents.services.sync import run_sync


def write(path: Path, text: str, *, mtime: int | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mtime is not None:
        os.utime(path, ns=(mtime, mtime))


def add_source(channel, kind: str, config: dict, **options) -> Source:
    return save_source(
        source=Source(
            channel=channel,
            name=options.pop("name", kind),
            kind=kind,
            config=config,
            **options,
        ),
        actor=COMMAND_LINE,
    )


def add_folder_source(channel, folder: Path, **options) -> Source:
    options.setdefault("name", "manuals")
    return add_source(channel, "folder", {"path": str(folder)}, **options)


def sync(source: Source) -> SourceSync:
    row, created = request_sync(
        source=source, actor=COMMAND_LINE, trigger="command", enqueue=False
    )
    assert created
    return run_sync(row.pk)


def by_key(source: Source) -> dict[str, Document]:
    return {d.source_key: d for d in Document.objects.filter(source=source)}


def counts(row: SourceSync) -> tuple[int, int, int, int, int]:
    """(added, revised, unchanged, removed, failed), the summary's order."""
    return row.added, row.revised, row.unchanged, row.removed, row.failed


def audited(action: str, document: Document | None = None) -> int:
    """How many audit rows of `action` there are (about `document`)."""
    rows = AuditEvent.objects.filter(action=action)
    if document is not None:
        rows = rows.filter(object_id=str(document.pk))
    return rows.count()


def run_worker(monkeypatch, **options) -> list[int]:
    """`manage.py ingest_worker --batch` in this process, until the queue is
    empty or after `max_tasks` (recovery and the schedule at its start);
    returns the niceness it asked for (not applied to the test process)."""
    monkeypatch.setattr(db_worker, "close_old_connections", lambda: None)
    monkeypatch.setattr(ingest_worker, "close_old_connections", lambda: None)
    niceness: list[int] = []
    monkeypatch.setattr(ingest_worker, "lower_priority", niceness.append)
    signals = (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT, signal.SIGALRM)
    handlers = {sig: signal.getsignal(sig) for sig in signals}
    try:
        call_command(
            "ingest_worker",
            batch=True,
            interval=0,
            startup_delay=False,
            reload=False,
            recovery_interval=0,
            verbosity=0,
            **options,
        )
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    return niceness
