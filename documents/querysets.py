"""Read paths: QuerySet methods named by intent.

Below models.py, which builds its managers from these, so nothing here imports
from documents: a metadata filter is applied with
`.filter(documents.filters.compile_filter(channel, metadata_filter))`, as the
search and the listing do.
"""

from django.db import models


class DocumentQuerySet(models.QuerySet):
    def for_channel(self, channel):
        return self.filter(channel=channel)

    def ready(self):
        return self.filter(status="ready")


class ChunkQuerySet(models.QuerySet):
    def for_channel(self, channel):
        return self.filter(channel=channel)
