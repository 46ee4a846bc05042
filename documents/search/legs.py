"""The two retrieval legs. Each is one index-friendly query with its own LIMIT
that returns [(chunk_id, score)] best first."""

from django.db import connection
from django.db.models import Sum

from documents.models import Channel, Chunk, KeywordStatistics, TermStatistic
from documents.search import terms

# At or below this many chunks to search, the vector leg sorts them all exactly;
# above it, the HNSW index is scanned iteratively until enough rows pass filters.
EXACT_SCAN_MAX_CHUNKS = 5_000
# The keyword leg fetches candidates through the GIN index for the rarest query
# terms whose chunk frequencies add up to at most this; commoner terms still count
# in every candidate's score but no longer add candidates (their IDF is small).
KEYWORD_CANDIDATE_BUDGET = 10_000


def _chunks(channel: Channel, documents, restricted: bool):
    chunks = Chunk.objects.for_channel(channel)
    if restricted:
        return chunks.in_documents(documents)
    return chunks.searchable()


def query_terms(channel: Channel, query: str) -> tuple[dict[str, tuple[int, int]], int]:
    """({lexeme: (frequency in the query, chunk frequency)}, chunk count) for a
    query, in one round trip."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT u.lexeme, cardinality(u.positions), "
            "COALESCE(s.chunk_frequency, 0), "
            f"(SELECT chunk_count FROM {KeywordStatistics._meta.db_table} "
            "WHERE channel_id = %s) "
            "FROM unnest(to_tsvector('english', %s)) AS u "
            f"LEFT JOIN {TermStatistic._meta.db_table} s "
            "ON s.channel_id = %s AND s.lexeme = u.lexeme",
            [channel.pk, query, channel.pk],
        )
        rows = cursor.fetchall()
    chunk_count = next((row[3] for row in rows if row[3] is not None), 0)
    return {row[0]: (row[1], row[2]) for row in rows}, chunk_count


def keyword_leg(
    channel: Channel, query: str, documents, restricted: bool, candidates: int
) -> list[tuple[int, float]]:
    """BM25 ranking: GIN-indexed lexeme match, ordered by Chunk.terms · IDF."""
    lexemes, chunk_count = query_terms(channel, query)
    present = {lex: v for lex, v in lexemes.items() if v[1] > 0}
    if not present:
        return []
    weights = {
        lexeme: query_frequency * terms.idf(frequency, chunk_count)
        for lexeme, (query_frequency, frequency) in present.items()
    }
    chosen: list[str] = []
    total = 0
    for lexeme in sorted(present, key=lambda lex: present[lex][1]):
        frequency = present[lexeme][1]
        if chosen and total + frequency > KEYWORD_CANDIDATE_BUDGET:
            break
        chosen.append(lexeme)
        total += frequency
    ranked = (
        _chunks(channel, documents, restricted)
        .keyword_ranked(terms.tsquery_text(chosen), terms.query_vector(weights))
        .values_list("id", "bm25")[:candidates]
    )
    return [(chunk_id, score) for chunk_id, score in ranked]


def vector_leg(
    channel: Channel,
    vector: list[float],
    model_name: str,
    documents,
    restricted: bool,
    candidates: int,
) -> list[tuple[int, float]]:
    """Cosine ranking; exact over small sets, iterative HNSW scan over large ones.

    Must run inside a transaction (the HNSW settings are SET LOCAL)."""
    chunks = _chunks(channel, documents, restricted).filter(embedding_model=model_name)
    searchable = _searchable_size(channel, documents, restricted)
    if searchable > EXACT_SCAN_MAX_CHUNKS:
        _configure_hnsw(candidates)
        ranked = _nearest(chunks, vector, candidates, exact=False)
        # More rows than candidates pass the filters here, so a short answer means
        # the graph walk gave up early: rank exactly instead of returning it.
        if len(ranked) >= candidates:
            return ranked
    return _nearest(chunks, vector, candidates, exact=True)


def _searchable_size(channel: Channel, documents, restricted: bool) -> int:
    """How many chunks the vector leg ranks, without touching the chunk table:
    the channel's keyword statistics, or Document.chunk_count (kept by ingestion)
    of the matching documents."""
    if not restricted:
        total = (
            KeywordStatistics.objects.filter(channel=channel)
            .values_list("chunk_count", flat=True)
            .first()
        )
        if total is not None:
            return total
    return documents.aggregate(total=Sum("chunk_count"))["total"] or 0


def _nearest(
    chunks, vector, candidates: int, *, exact: bool
) -> list[tuple[int, float]]:
    rows = chunks.nearest(vector, exact=exact).values_list("id", "distance")[
        :candidates
    ]
    # relaxed_order iterative scans may return rows slightly out of order.
    ranked = sorted(rows, key=lambda row: row[1])
    return [(chunk_id, 1.0 - distance) for chunk_id, distance in ranked]


def _configure_hnsw(candidates: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT set_config('hnsw.ef_search', %s, true), "
            "set_config('hnsw.iterative_scan', 'relaxed_order', true), "
            "set_config('hnsw.max_scan_tuples', %s, true)",
            [
                str(min(1000, max(100, 2 * candidates))),
                str(max(20_000, candidates * 200)),
            ],
        )
