"""Read paths: QuerySet methods named by intent.

Below models.py, which builds its managers from these, so nothing here imports
from documents: a metadata filter is applied with
`.filter(documents.filters.compile_filter(channel, metadata_filter))`, as the
search and the listing do.
"""

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import Count, F, Window
from django.db.models.functions import RowNumber, TruncDate
from django.utils import timezone


class DocumentQuerySet(models.QuerySet):
    def for_channel(self, channel):
        return self.filter(channel=channel)

    def ready(self):
        return self.filter(status="ready")


class ChunkQuerySet(models.QuerySet):
    def for_channel(self, channel):
        return self.filter(channel=channel)


class AuditEventQuerySet(models.QuerySet):
    def with_repeats(self):
        """Each run of identical events (same action, outcome, actor, door,
        channel, object and detail on one day: three uploads of one file) as
        its newest row, with how many there were as `repeats`."""
        same = [
            F("action"),
            F("outcome"),
            F("actor"),
            F("via"),
            F("channel_slug"),
            F("object_repr"),
            F("detail"),
            TruncDate("at"),
        ]
        return self.annotate(
            repeats=Window(Count("id"), partition_by=same),
            newest=Window(
                RowNumber(),
                partition_by=same,
                order_by=[F("at").desc(), F("id").desc()],
            ),
        ).filter(newest=1)


class WorkerHeartbeatQuerySet(models.QuerySet):
    def recent(self, now=None):
        """Workers seen within WORKER_SEEN_SECONDS of `now`."""
        since = (now or timezone.now()) - timedelta(
            seconds=settings.WORKER_SEEN_SECONDS
        )
        return self.filter(seen_at__gte=since)
