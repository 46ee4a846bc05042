"""Read paths: QuerySet methods named by intent."""

from django.db import models
from django.db.models import Value
from pgvector.django import CosineDistance


class DocumentQuerySet(models.QuerySet):
    def for_channel(self, channel):
        return self.filter(channel=channel)

    def ready(self):
        return self.filter(status="ready")

    def matching(self, channel, metadata_filter: dict | None):
        """Documents matching a channel's `metadata_filter` (FilterError if bad)."""
        from documents.filters import compile_filter

        return self.filter(compile_filter(channel, metadata_filter))


class ChunkQuerySet(models.QuerySet):
    def for_channel(self, channel):
        return self.filter(channel=channel)

    def nearest(self, vector: list[float], *, exact: bool = False):
        """Ordered by cosine distance to `vector` (annotated as `distance`).

        With exact=True the ORDER BY cannot use the HNSW index, so PostgreSQL
        scans the rows the other conditions select and sorts them exactly."""
        distance = CosineDistance("embedding", vector)
        order = distance + Value(0.0) if exact else distance
        return (
            self.filter(embedding__isnull=False)
            .annotate(distance=distance)
            .order_by(order)
        )
