"""Read paths: QuerySet methods named by intent.

Below models.py, which builds its managers from these, so nothing here imports
from documents: a metadata filter is applied with
`.filter(documents.filters.compile_filter(channel, metadata_filter))`, as the
search and the listing do.
"""

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone


class DocumentQuerySet(models.QuerySet):
    def for_channel(self, channel):
        return self.filter(channel=channel)

    def ready(self):
        return self.filter(status="ready")


class ChunkQuerySet(models.QuerySet):
    def for_channel(self, channel):
        return self.filter(channel=channel)


class WorkerHeartbeatQuerySet(models.QuerySet):
    def recent(self, now=None):
        """Workers seen within WORKER_SEEN_SECONDS of `now`."""
        since = (now or timezone.now()) - timedelta(
            seconds=settings.WORKER_SEEN_SECONDS
        )
        return self.filter(seen_at__gte=since)
