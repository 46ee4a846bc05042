"""Workers' heartbeats (documents.models.WorkerHeartbeat)."""

import os
import socket
from datetime import datetime, timedelta

from django.utils import timezone

from documents.models import WorkerHeartbeat

# Heartbeats of workers gone this long are deleted.
FORGET_AFTER = timedelta(days=1)


def beat(worker_id: str, *, started_at: datetime, now: datetime | None = None) -> None:
    """Record that the worker `worker_id` of this process is alive."""
    now = now or timezone.now()
    WorkerHeartbeat.objects.update_or_create(
        worker_id=worker_id[:64],
        defaults={
            "hostname": socket.gethostname()[:255],
            "pid": os.getpid(),
            "started_at": started_at,
            "seen_at": now,
        },
    )
    WorkerHeartbeat.objects.filter(seen_at__lt=now - FORGET_AFTER).delete()


def stopped(worker_id: str) -> None:
    """A worker that stops cleanly is no longer seen at once."""
    WorkerHeartbeat.objects.filter(worker_id=worker_id[:64]).delete()
