"""Read paths: QuerySet methods named by intent."""

from django.contrib.postgres.search import SearchQueryField
from django.db import models
from django.db.models import BooleanField, F, Func, Value
from django.db.models.functions import Cast
from pgvector.django import CosineDistance, MaxInnerProduct


class DocumentQuerySet(models.QuerySet):
    def for_channel(self, channel):
        return self.filter(channel=channel)

    def ready(self):
        return self.filter(status="ready")

    def matching(self, channel, metadata_filter: dict | None):
        """Documents matching a channel's `metadata_filter` (FilterError if bad)."""
        from documents.filters import compile_filter

        return self.filter(compile_filter(channel, metadata_filter))


class MatchesTsquery(Func):
    """`search_vector @@ '<lexemes>'::tsquery`: the lexemes are used as given
    (already normalised by the english configuration), never re-parsed."""

    arg_joiner = " @@ "
    template = "%(expressions)s"
    output_field = BooleanField()


class ChunkQuerySet(models.QuerySet):
    def for_channel(self, channel):
        return self.filter(channel=channel)

    def searchable(self):
        """Chunks of ready documents, the only ones retrieval may return."""
        return self.filter(document__status="ready")

    def searchable_in(self, channel):
        """Chunks of the channel's ready documents, written as "not one of the
        few documents that aren't ready" so that a ranked scan filters each row
        against a small hashed list instead of joining every document."""
        from documents.models import Document

        not_ready = Document.objects.filter(
            channel=channel,
            status__in=[s for s in Document.Status.values if s != "ready"],
        ).values("id")
        return self.filter(channel=channel).exclude(document__in=not_ready)

    def in_documents(self, documents):
        """Chunks of the documents of a Document queryset (a semi-join)."""
        return self.filter(document__in=documents.values("id"))

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

    def keyword_ranked(self, tsquery: str | None, query_terms):
        """Chunks matching `tsquery` (a `'a' | 'b'` string of lexemes) through the
        GIN index, ordered by BM25: the inner product of Chunk.terms with the
        query's IDF vector (annotated as `bm25`). With tsquery None every chunk
        of the queryset that shares a term is scored (for small filtered sets)."""
        negative = MaxInnerProduct("terms", query_terms)
        chunks = self.annotate(bm25=-negative)
        if tsquery is None:
            chunks = chunks.filter(bm25__gt=0)
        else:
            chunks = chunks.filter(
                MatchesTsquery(
                    F("search_vector"), Cast(Value(tsquery), SearchQueryField())
                )
            )
        return chunks.order_by(negative)
