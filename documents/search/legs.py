"""The two retrieval legs. Each is one index-friendly query with its own LIMIT
that returns [(chunk_id, score)] best first."""

from functools import cached_property

from django.db import connection
from django.db.models import QuerySet, Sum

from documents.models import Channel, Chunk, KeywordStatistics, TermStatistic
from documents.search import terms

# At or below this many chunks to search, the vector leg sorts them all exactly;
# above it, the HNSW index is scanned iteratively until enough rows pass filters.
EXACT_SCAN_MAX_CHUNKS = 5_000
# The keyword leg fetches candidates through the GIN index for the rarest query
# terms whose chunk frequencies add up to at most this; commoner terms still count
# in every candidate's score but no longer add candidates (their IDF is small).
# On SciFact (14,624 chunks) 2,000 keeps nDCG@10 (0.7177 vs 0.7176 at 10,000)
# and cuts the keyword leg's scoring work about fourfold.
KEYWORD_CANDIDATE_BUDGET = 500


class Scope:
    """What one search covers: the ready documents searched, whether a filter or
    document ids restrict them, and about how many chunks they hold."""

    def __init__(self, channel: Channel, documents: QuerySet, restricted: bool):
        self.channel = channel
        self.documents = documents
        self.restricted = restricted

    @classmethod
    def of(cls, channel: Channel, documents: QuerySet, restricted: bool) -> "Scope":
        return cls(channel, documents, restricted)

    @cached_property
    def size(self) -> int:
        """Chunks in scope, without touching the chunk table: the channel's
        keyword statistics, or Document.chunk_count (kept by ingestion) of the
        documents. (The keyword leg reads the first with its query's terms and
        fills this in, sparing hybrid searches a round trip.)"""
        if not self.restricted:
            total = (
                KeywordStatistics.objects.filter(channel=self.channel)
                .values_list("chunk_count", flat=True)
                .first()
            )
            if total is not None:
                return total
        return self.documents.aggregate(total=Sum("chunk_count"))["total"] or 0

    def chunks(self) -> QuerySet:
        if self.restricted:
            return Chunk.objects.for_channel(self.channel).in_documents(self.documents)
        return Chunk.objects.searchable_in(self.channel)


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


def keyword_leg(scope: Scope, query: str, candidates: int) -> list[tuple[int, float]]:
    """BM25 ranking: GIN-indexed lexeme match, ordered by Chunk.terms · IDF."""
    lexemes, chunk_count = query_terms(scope.channel, query)
    if not scope.restricted:
        scope.size = chunk_count
    present = {lexeme: v[1] for lexeme, v in lexemes.items() if v[1] > 0}
    if not present:
        return []
    weights = {
        lexeme: lexemes[lexeme][0] * terms.idf(frequency, chunk_count)
        for lexeme, frequency in present.items()
    }
    query_vector = terms.query_vector(weights)

    def ranked(tsquery: str | None) -> list[tuple[int, float]]:
        rows = (
            scope.chunks()
            .keyword_ranked(tsquery, query_vector)
            .values_list("id", "bm25")[:candidates]
        )
        return list(rows)

    if scope.restricted and scope.size <= KEYWORD_CANDIDATE_BUDGET:
        # A small filtered set is scored whole, through the filter's own index.
        return ranked(None)
    chosen, operator = candidate_terms(present, chunk_count, KEYWORD_CANDIDATE_BUDGET)
    results = ranked(terms.tsquery_text(chosen, operator))
    if not results and operator == "&":
        results = ranked(terms.tsquery_text(chosen[:1]))
    return results


def candidate_terms(
    frequencies: dict[str, int], chunk_count: int, budget: float
) -> tuple[list[str], str]:
    """The query lexemes that fetch candidates, and how they combine.

    Rarest first, OR-ed while their chunk frequencies add up to at most `budget`:
    commoner terms have small IDFs and still count in every candidate's score.
    When even the rarest is commoner than the budget, candidates are the chunks
    holding all of the rarest few (AND), as many as it takes to bring the expected
    count under the budget.
    """
    ordered = sorted(frequencies, key=lambda lexeme: (frequencies[lexeme], lexeme))
    if frequencies[ordered[0]] <= budget:
        chosen: list[str] = []
        total = 0
        for lexeme in ordered:
            if chosen and total + frequencies[lexeme] > budget:
                break
            chosen.append(lexeme)
            total += frequencies[lexeme]
        return chosen, "|"
    chosen = []
    expected = float(max(chunk_count, 1))
    for lexeme in ordered:
        # A term in most chunks narrows little and has a huge posting list.
        if chosen and frequencies[lexeme] > chunk_count / 2:
            break
        chosen.append(lexeme)
        expected *= frequencies[lexeme] / max(chunk_count, 1)
        if expected <= budget:
            break
    return chosen, "&"


def vector_leg(
    scope: Scope, vector: list[float], model_name: str, candidates: int
) -> list[tuple[int, float]]:
    """Cosine ranking; exact over small sets, iterative HNSW scan over large ones.

    Must run inside a transaction (the HNSW settings are SET LOCAL)."""
    chunks = scope.chunks().filter(embedding_model=model_name)
    searchable = scope.size
    if searchable > EXACT_SCAN_MAX_CHUNKS:
        _configure_hnsw(candidates)
        ranked = _nearest(chunks, vector, candidates, exact=False)
        # More rows than candidates pass the filters here, so a short answer means
        # the graph walk gave up early: rank exactly instead of returning it.
        if len(ranked) >= candidates:
            return ranked
    return _nearest(chunks, vector, candidates, exact=True)


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
    # ef_search = the candidates asked for: the iterative scan goes on past it
    # when filters drop rows. Twice that cost a third more time on SciFact and
    # scored no better (nDCG@10 0.725 vs 0.728).
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT set_config('hnsw.ef_search', %s, true), "
            "set_config('hnsw.iterative_scan', 'relaxed_order', true), "
            "set_config('hnsw.max_scan_tuples', %s, true)",
            [
                str(min(1000, max(40, candidates))),
                str(max(20_000, candidates * 200)),
            ],
        )
