"""Read paths: QuerySet methods named by intent."""

from django.db import models


class DocumentQuerySet(models.QuerySet):
    def for_channel(self, channel):
        return self.filter(channel=channel)

    def ready(self):
        return self.filter(status="ready")


class ChunkQuerySet(models.QuerySet):
    def for_channel(self, channel):
        return self.filter(channel=channel)

    def searchable(self):
        """Chunks of ready documents, the only ones retrieval may return."""
        return self.filter(document__status="ready")
