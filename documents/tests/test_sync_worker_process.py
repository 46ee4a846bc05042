"""A real `manage.py ingest_worker` process runs a scheduled sync: at its
start it queues the syncs that are due, then runs the sync task."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from documents.models import Source, SourceSync
from documents.tests.syncing import add_folder_source, by_key, write

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]


def test_a_worker_process_runs_a_due_scheduled_sync(make_channel, folder, tmp_path):
    channel = make_channel()
    write(folder / "a.txt", "Alpha text about pumps.")
    write(folder / "b.txt", "Beta text about valves.")
    source = add_folder_source(channel, folder, every_minutes=30)
    due = timezone.now() - timedelta(minutes=1)
    Source.objects.filter(pk=source.pk).update(next_sync_at=due)

    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "project.settings",
        "QUIRE_DATABASE_NAME": connection.settings_dict["NAME"],
        "SOURCE_FOLDERS": str(folder.parent),
        "MEDIA_ROOT": str(tmp_path / "worker-media"),
        "INGEST_WORKER_NICENESS": "0",
    }
    worker = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "ingest_worker",
            "--batch",
            "--max-tasks",
            "1",
            "--recovery-interval",
            "0",
            "--no-startup-delay",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert worker.returncode == 0, worker.stderr
    assert "Queued scheduled syncs: manuals" in worker.stdout

    (row,) = SourceSync.objects.filter(source=source)
    assert (row.trigger, row.status, row.added) == ("schedule", "done", 2), row.errors
    assert set(by_key(source)) == {"a.txt", "b.txt"}
    source.refresh_from_db()
    assert source.next_sync_at > due + timedelta(minutes=29)
