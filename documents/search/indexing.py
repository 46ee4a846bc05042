"""Keyword-index hooks that ingestion calls inside its replacement transaction.

Contract (used by documents.services.documents):
- prepare_chunks(channel, chunks): called with the new, unsaved Chunk objects
  before they are bulk-created; sets Chunk.terms / Chunk.term_count and updates
  the channel's term statistics in the same transaction. Their lexemes
  (chunk_lexemes) may be counted before, outside it.
- forget_chunks(channel, document_id): called before a document's old chunks are
  deleted (re-ingestion or deletion), in the same transaction.
"""

from collections import Counter

from django.db import connection, transaction

from documents.ingestion.context import retrieval_text
from documents.models import Chunk, KeywordStatistics, TermStatistic
from documents.search.terms import lexeme_counts, weight_vector


def chunk_lexemes(chunks) -> list[Counter]:
    """Each chunk's lexeme counts (of its context with its text), as
    prepare_chunks needs them; chunks are anything with `context` and `text`.
    Reads nothing stored, so it can run before the replacement transaction."""
    return lexeme_counts(
        [retrieval_text(chunk.context, chunk.text) for chunk in chunks]
    )


def prepare_chunks(channel, chunks, *, counts: list[Counter] | None = None) -> None:
    """Give new chunks their BM25 term weights and count them in the statistics.
    `counts` are the chunks' chunk_lexemes when they were computed already."""
    chunks = list(chunks)
    if not chunks:
        return
    if counts is None:
        counts = chunk_lexemes(chunks)
    lengths = [sum(c.values()) for c in counts]
    average = _add_totals(channel.pk, len(chunks), sum(lengths))
    frequencies: Counter = Counter()
    for chunk, chunk_counts in zip(chunks, counts, strict=True):
        chunk.terms, chunk.term_count = weight_vector(chunk_counts, average)
        frequencies.update(chunk_counts.keys())
    _add_frequencies(channel.pk, frequencies)


def forget_chunks(channel, document_id: int) -> None:
    """Take a document's stored chunks out of the channel's term statistics."""
    table = Chunk._meta.db_table
    stats = TermStatistic._meta.db_table
    # One statement: the frequencies' update and the chunks' totals (a round
    # trip is a large share of a small document's ingestion).
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH old AS (SELECT u.lexeme, count(*) AS n FROM {table} c "
            "CROSS JOIN LATERAL unnest(c.search_vector) AS u "
            "WHERE c.document_id = %s GROUP BY u.lexeme ORDER BY u.lexeme), "
            f"forgotten AS (UPDATE {stats} s "
            "SET chunk_frequency = s.chunk_frequency - old.n "
            "FROM old WHERE s.channel_id = %s AND s.lexeme = old.lexeme) "
            f"SELECT count(*), coalesce(sum(term_count), 0) FROM {table} "
            "WHERE document_id = %s",
            [document_id, channel.pk, document_id],
        )
        chunks, terms = cursor.fetchone()
    if chunks:
        _add_totals(channel.pk, -chunks, -terms)


def reweight_channel(channel, *, batch_size: int = 2000) -> int:
    """Recompute every chunk's BM25 weights with the channel's current average
    chunk length (weights are fixed at ingestion, when the average was what it
    was then) and the current K1/B. Returns the number of chunks rewritten."""
    stats = KeywordStatistics.objects.filter(channel=channel).first()
    if stats is None or not stats.chunk_count:
        return 0
    average = stats.average_length
    done = 0
    last_id = 0
    while True:
        rows = list(
            Chunk.objects.filter(channel=channel, id__gt=last_id)
            .order_by("id")
            .values_list("id", "context", "text")[:batch_size]
        )
        if not rows:
            return done
        counts = lexeme_counts([retrieval_text(c, text) for _, c, text in rows])
        chunks = []
        for (pk, *_), chunk_counts in zip(rows, counts, strict=True):
            vector, length = weight_vector(chunk_counts, average)
            chunks.append(Chunk(id=pk, terms=vector, term_count=length))
        with transaction.atomic():
            Chunk.objects.bulk_update(chunks, ["terms", "term_count"])
        done += len(chunks)
        last_id = rows[-1][0]


def _add_totals(channel_id: int, chunks: int, terms: int) -> float:
    """Adjust the channel's totals (row-locked until commit); the new average length."""
    table = KeywordStatistics._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} AS t (channel_id, chunk_count, term_total) "
            "VALUES (%s, GREATEST(%s, 0), GREATEST(%s, 0)) "
            "ON CONFLICT (channel_id) DO UPDATE SET "
            "chunk_count = GREATEST(t.chunk_count + %s, 0), "
            "term_total = GREATEST(t.term_total + %s, 0) "
            "RETURNING chunk_count, term_total",
            [channel_id, chunks, terms, chunks, terms],
        )
        chunk_count, term_total = cursor.fetchone()
    return term_total / chunk_count if chunk_count else 0.0


def _add_frequencies(channel_id: int, frequencies: Counter) -> None:
    if not frequencies:
        return
    # Sorted so concurrent ingestions lock statistic rows in the same order.
    lexemes = sorted(frequencies)
    table = TermStatistic._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (channel_id, lexeme, chunk_frequency) "
            "SELECT %s, t.lexeme, t.n FROM unnest(%s::text[], %s::bigint[]) "
            "AS t(lexeme, n) ORDER BY t.lexeme "
            "ON CONFLICT (channel_id, lexeme) DO UPDATE SET "
            f"chunk_frequency = {table}.chunk_frequency + EXCLUDED.chunk_frequency",
            [channel_id, lexemes, [frequencies[lexeme] for lexeme in lexemes]],
        )
