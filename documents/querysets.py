"""Read paths: QuerySet methods named by intent."""

from django.db import models


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
