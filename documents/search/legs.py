"""The two retrieval legs. Each is one index-friendly query with its own LIMIT
that returns [(chunk_id, score)] best first.

The legs are plain SQL around one condition for the chunks in scope: a search
is a handful of small statements, and building each through the ORM cost more
than PostgreSQL took to run it. Only a filtered scope's documents go through
the ORM (documents.filters builds them), compiled once per search.
"""

import contextlib
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from django.conf import settings
from django.contrib.postgres.aggregates import ArrayAgg
from django.db import transaction
from django.db.models import QuerySet, Sum, TextField
from django.db.models.expressions import RawSQL
from django.db.models.functions import Cast

from documents.models import (
    Channel,
    Chunk,
    Document,
    KeywordStatistics,
    TermStatistic,
)
from documents.replicas import read_connection
from documents.search import terms
from documents.search.rows import ROW_COLUMNS, ROW_SOURCE

CHUNKS = Chunk._meta.db_table
DOCUMENTS = Document._meta.db_table
NOT_READY = [status for status in Document.Status.values if status != "ready"]

# An iterative HNSW scan may visit this many times the rows it expects to walk
# past before `candidates` of them pass the filter (the share kept is estimated
# from chunk counts, and matching rows cluster unevenly in the graph).
SCAN_TUPLES_MARGIN = 4
# Bounds of hnsw.max_scan_tuples: at least pgvector's own default, and at most
# what an exact ranking of any scope that reaches it would cost.
MIN_SCAN_TUPLES = 20_000
MAX_SCAN_TUPLES = 500_000
# The keyword leg fetches candidates through the GIN index for the rarest query
# terms whose chunk frequencies add up to at most this; commoner terms still count
# in every candidate's score but no longer add candidates (their IDF is small).
# 500 scored as well on SciFact as larger budgets, for a fraction of the work
# (benchmarks/langchain_pgvector.py; docs/performance.md).
KEYWORD_CANDIDATE_BUDGET = 500
# A filter's documents are read (ids and chunk counts) up to this many; past
# it the filter is broad, its scans are walks (plan_vector_leg) and check the
# filter per row (Scope.checked_per_row). At 1M chunks (50,000 documents,
# benchmarks/scale.py --filter-read-limit) 5,000 took a ~50% filter's hybrid
# p50/p95 from 44/61 to 20/26 ms; 2,000 also sent the 5% filter (2,520
# documents) down the per-row check, which cost it more than the read saved.
# None reads them all.
FILTER_READ_LIMIT: int | None = 5_000


class Scope:
    """What one search covers: the ready documents searched, whether a filter or
    document ids restrict them, and about how many chunks they hold."""

    def __init__(self, channel: Channel, documents: QuerySet, restricted: bool):
        self.channel = channel
        self.documents = documents
        self.restricted = restricted

    @cached_property
    def channel_size(self) -> int:
        """Chunks in the channel, from its keyword statistics (the keyword leg
        reads them with its query's terms and fills this in)."""
        total = (
            KeywordStatistics.objects.filter(channel=self.channel)
            .values_list("chunk_count", flat=True)
            .first()
        )
        return total or 0

    @cached_property
    def size(self) -> int:
        """Chunks in scope, without touching the chunk table: the channel's
        size, or Document.chunk_count (kept by ingestion) of the documents.
        Of a filter that keeps more than FILTER_READ_LIMIT documents
        (`complete` False), the chunks of the first FILTER_READ_LIMIT found:
        a lower bound."""
        if self.restricted:
            return self._filtered[1]
        if self.channel_size:
            return self.channel_size
        return self.documents.aggregate(total=Sum("chunk_count"))["total"] or 0

    @property
    def complete(self) -> bool:
        """Whether `size` is exact: the scope is unrestricted, or its filter's
        documents were all read."""
        return not self.restricted or self._filtered[0] is not None

    def read_all(self) -> None:
        """Read every document of the filter (their ids and chunk count), when
        the first read stopped at FILTER_READ_LIMIT: before ranking the scope
        exactly, or where `size` must be exact."""
        if not self.complete:
            self._filtered = self._read(None)
            self.__dict__.pop("size", None)

    @cached_property
    def _filtered(self) -> tuple[str | None, int]:
        """The filter's document ids (a PostgreSQL array literal) and their
        chunk count, from one scan of the documents that stops after
        FILTER_READ_LIMIT of them; the ids are None when it stopped there.
        Each leg then checks ids instead of evaluating the filter again: under
        a filter keeping half of 20,000 documents that scan took 15-35 ms,
        and a search ran it three times (the size, then each leg). The ids
        travel as text both ways: converting 10,000 of them to and from a
        Python list took longer than the scan."""
        return self._read(FILTER_READ_LIMIT)

    def _read(self, limit: int | None) -> tuple[str | None, int]:
        documents = self.documents.order_by()
        if limit is None:
            row = documents.aggregate(
                ids=Cast(ArrayAgg("id"), TextField()), total=Sum("chunk_count")
            )
            return row["ids"] or "{}", row["total"] or 0
        # One row past the limit says whether there were more.
        rows = list(documents.values_list("id", "chunk_count")[: limit + 1])
        total = sum(count for _, count in rows[:limit])
        if len(rows) > limit:
            return None, total
        return "{" + ",".join(str(pk) for pk, _ in rows) + "}", total

    @cached_property
    def condition(self) -> tuple[str, list]:
        """SQL selecting the chunks in scope (table alias `c`), and its parameters.

        A filter's documents are a constant array of ids (all of them read
        first), so an exact ranking fetches their chunks through (channel,
        document)."""
        if not self.restricted:
            return self._not_unready()
        self.read_all()
        return (
            "c.channel_id = %s AND c.document_id = ANY(%s::bigint[])",
            [self.channel.pk, self._filtered[0]],
        )

    @cached_property
    def checked_per_row(self) -> tuple[str, list]:
        """The same chunks, each row checked against a hashed list of the
        filter's document ids: for scans led by another index (HNSW, GIN).
        A constant `= ANY` array would be hashed too, but PostgreSQL plans it
        element by element (8-20 ms for 10,000 ids) and then prefers ANDing
        in the document index (194,000 rows under a ~50% filter); `NOT IN`
        over the unnested array is one hashed subplan.

        A filter whose documents were not all read (more than
        FILTER_READ_LIMIT: a broad one, whose scans pass few rows for each
        they keep) is checked row by row instead: the row's document, looked
        up by its key, against the filter. Reading 24,000 documents' ids cost
        more (25-45 ms at 1M chunks) than the few hundred lookups of a walk or
        of the keyword leg's candidates under a filter keeping half."""
        if not self.restricted:
            return self._not_unready()
        if not self.complete:
            document = self.documents.order_by().filter(pk=RawSQL("c.document_id", []))
            sql, params = document.values("pk").query.sql_with_params()
            # OFFSET 0 keeps the EXISTS a per-row lookup: pulled up into a
            # semi-join it would scan every document of the filter again.
            return (
                f"c.channel_id = %s AND EXISTS ({sql} OFFSET 0)",
                [self.channel.pk, *params],
            )
        return (
            "c.channel_id = %s AND NOT (c.document_id NOT IN "
            "(SELECT unnest(%s::bigint[])))",
            [self.channel.pk, self._filtered[0]],
        )

    def _not_unready(self) -> tuple[str, list]:
        # "Not one of the few documents that aren't ready", so that a ranked scan
        # checks each row against a small hashed list instead of joining every
        # document.
        return (
            f"c.channel_id = %s AND c.document_id NOT IN (SELECT id FROM {DOCUMENTS} "
            "WHERE channel_id = %s AND status = ANY(%s))",
            [self.channel.pk, self.channel.pk, NOT_READY],
        )


def query_terms(channel: Channel, query: str) -> tuple[dict[str, tuple[int, int]], int]:
    """({lexeme: (frequency in the query, chunk frequency)}, chunk count) for a
    query, in one round trip."""
    with read_connection().cursor() as cursor:
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


@dataclass(frozen=True)
class Statement:
    """One SELECT a leg needs, with the SET LOCALs that must run before it in
    its transaction."""

    sql: str
    params: list
    settings: tuple[str, ...] = ()


# A leg as steps: a generator that yields the statements it needs, is sent each
# one's rows, and returns the leg's result; run_legs does the I/O.
Leg = Generator[Statement, list[tuple], Any]


@dataclass
class Preload:
    """The rows (documents.search.rows) of each leg's best `rows` chunks, read
    with its ranking so that the fused best need no statement of their own;
    `found` holds them by chunk id. A chunk fused into the results from
    further down both legs is loaded after."""

    channel_id: int
    rows: int
    found: dict[int, tuple] = field(default_factory=dict)

    def wrap(self, statement: Statement) -> Statement:
        """`statement` (id and score, best first) with the rows of its first
        `rows` results. row_number() over the ranked subquery numbers its rows
        in the order it returns them (no second sort, so ties keep theirs)."""
        return Statement(
            "SELECT r.id, r.score, l.* FROM ("
            "SELECT s.id, s.score, row_number() OVER () AS rank "
            f"FROM ({statement.sql}) s(id, score)) r "
            f"LEFT JOIN LATERAL (SELECT {ROW_COLUMNS} FROM {ROW_SOURCE} "
            "WHERE c.id = r.id AND r.rank <= %s OFFSET 0) l ON true ORDER BY r.rank",
            [*statement.params, self.channel_id, self.rows],
            statement.settings,
        )

    def keep(self, rows: list[tuple]) -> list[tuple]:
        """The (id, score) of a wrapped statement's rows, keeping their rows."""
        for row in rows:
            if row[2] is not None:  # a document id: within the first `rows`
                self.found[row[0]] = row[2:]
        return [row[:2] for row in rows]


def _statement(statement: Statement, preload: Preload | None) -> Statement:
    return statement if preload is None else preload.wrap(statement)


def _rows(rows: list[tuple], preload: Preload | None) -> list[tuple]:
    return rows if preload is None else preload.keep(rows)


def run_legs(*starts: Callable[[], Leg]) -> list:
    """The results of legs (each started by calling its function), with
    their first statements sent to PostgreSQL together and read in one round
    trip (psycopg's pipeline mode).

    A leg is started once the statements of the legs before it are on their
    way, so a vector leg waiting for its query embedding waits while
    PostgreSQL runs the keyword leg; the first leg starts before the pipeline,
    so what it reads to plan its statement (the query's terms) is read as
    usual. A leg's further statements (a fallback) run one at a time.

    The legs' statements read one snapshot (a repeatable-read transaction,
    unless the caller has a transaction of its own): a new revision committed
    while they run is seen by all of them or by none, so a search never
    fuses passages of two revisions of a document."""
    connection = read_connection()
    results: list = [None] * len(starts)
    pending: list[tuple[int, Leg, Any]] = []
    with contextlib.ExitStack() as cursors:
        # Errors surface when the pipeline syncs, outside the cursors' own
        # translation into Django's exceptions (a replica read retries on those).
        with connection.wrap_database_errors, contextlib.ExitStack() as pipeline:
            for index, start in enumerate(starts):
                steps = start()
                try:
                    statement = next(steps)
                except StopIteration as done:
                    results[index] = done.value
                    continue
                own_snapshot = False
                if not pending:
                    own_snapshot = not connection.in_atomic_block
                    if own_snapshot:
                        cursors.enter_context(
                            transaction.atomic(using=connection.alias)
                        )
                    connection.ensure_connection()
                    pipeline.enter_context(connection.connection.pipeline())
                cursor = cursors.enter_context(connection.cursor())
                if own_snapshot:
                    # Sent with the first statement, after the BEGIN psycopg adds.
                    cursor.execute(ONE_SNAPSHOT)
                _send(cursor, statement)
                pending.append((index, steps, cursor))
        for index, steps, cursor in pending:
            rows = cursor.fetchall()
            while True:
                try:
                    statement = steps.send(rows)
                except StopIteration as done:
                    results[index] = done.value
                    break
                _send(cursor, statement)
                rows = cursor.fetchall()
    return results


ONE_SNAPSHOT = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"


def _send(cursor, statement: Statement) -> None:
    # Pipeline mode takes one statement per execute; SET LOCAL lasts to the
    # end of the transaction the pipeline's statements share.
    for setting in statement.settings:
        cursor.execute(setting)
    cursor.execute(statement.sql, statement.params)


def keyword_steps(
    scope: Scope, query: str, candidates: int, preload: Preload | None = None
) -> Leg:
    """The keyword leg as steps (run_legs): BM25 ranking, a GIN-indexed lexeme
    match ordered by Chunk.terms · IDF. The query's terms are read first, to
    choose the lexemes that fetch candidates. With `preload`, the best
    chunks' rows come along."""
    lexemes, chunk_count = query_terms(scope.channel, query)
    scope.channel_size = chunk_count
    present = {lexeme: v[1] for lexeme, v in lexemes.items() if v[1] > 0}
    if not present:
        return []
    weights = {
        lexeme: lexemes[lexeme][0] * terms.idf(frequency, chunk_count)
        for lexeme, frequency in present.items()
    }
    query_vector = terms.query_vector(weights).to_text()
    if scope.restricted and scope.size <= KEYWORD_CANDIDATE_BUDGET:
        # A small filtered set is scored whole, through the filter's own index.
        statement = _bm25_statement(scope, query_vector, None, candidates)
        return _rows((yield _statement(statement, preload)), preload)
    chosen, operator = candidate_terms(present, chunk_count, KEYWORD_CANDIDATE_BUDGET)
    statement = _bm25_statement(
        scope, query_vector, terms.tsquery_text(chosen, operator), candidates
    )
    results = _rows((yield _statement(statement, preload)), preload)
    if not results and operator == "&":
        statement = _bm25_statement(
            scope, query_vector, terms.tsquery_text(chosen[:1]), candidates
        )
        results = _rows((yield _statement(statement, preload)), preload)
    return results


def _bm25_statement(
    scope: Scope, query_vector: str, tsquery: str | None, candidates: int
) -> Statement:
    """Chunks matching `tsquery` (a `'a' | 'b'` string of lexemes, used as given)
    through the GIN index, ordered by BM25: the inner product of Chunk.terms with
    the query's IDF vector. With tsquery None every chunk in scope that shares a
    term is scored (for small filtered sets)."""
    where, params = scope.condition if tsquery is None else scope.checked_per_row
    if tsquery is None:
        match, match_params = "(c.terms <#> %s::sparsevec) < 0", [query_vector]
    else:
        match, match_params = "c.search_vector @@ %s::tsquery", [tsquery]
    return Statement(
        f"SELECT c.id, -(c.terms <#> %s::sparsevec) AS bm25 FROM {CHUNKS} c "
        f"WHERE {where} AND {match} ORDER BY bm25 DESC LIMIT %s",
        [query_vector, *params, *match_params, candidates],
    )


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


class VectorStrategy:
    """How the vector leg ranked a scope (recorded on its trace span)."""

    EXACT = "exact"
    HNSW = "hnsw"
    # The iterative scan reached its max_scan_tuples short: ranked exactly instead.
    HNSW_THEN_EXACT = "hnsw+exact"


@dataclass(frozen=True)
class VectorPlan:
    """The vector leg's plan for one scope: an exact ranking of the chunks in
    scope, or an iterative HNSW scan allowed to visit `max_scan_tuples` rows."""

    exact: bool
    max_scan_tuples: int = 0


def plan_vector_leg(scope: Scope, candidates: int) -> VectorPlan:
    """Exact when ranking every chunk in scope costs less than the HNSW walk,
    otherwise an iterative HNSW scan (walk_plan).

    Scope.size (the filter's documents' chunk counts, known before the leg
    runs) prices the exact ranking; the walk visits about candidates / share
    rows before `candidates` pass the filter, each worth
    settings.SEARCH_EXACT_ROWS_PER_VISIT rows ranked exactly. So a scope is
    ranked exactly while size² <= rows_per_visit x candidates x channel size:
    the threshold grows with the square root of the channel (about 31,600
    chunks at 1M for 100 candidates and the default 10), and a narrow filter,
    where the walk would pass over hundreds of rows for each one it keeps and
    still miss some, is complete and faster sorted (benchmarks/scale.py --calibrate)."""
    rows_per_visit = settings.SEARCH_EXACT_ROWS_PER_VISIT

    def small() -> bool:
        channel_size = max(scope.channel_size, scope.size)
        return scope.size * scope.size <= rows_per_visit * candidates * channel_size

    # A size read short of the filter's end is a lower bound: a walk if even
    # that is large, otherwise read the rest to know.
    if small() and not scope.complete:
        scope.read_all()
    if small():
        return VectorPlan(exact=True)
    return walk_plan(scope, candidates)


def walk_plan(scope: Scope, candidates: int) -> VectorPlan:
    """An iterative HNSW scan of `scope` that may visit SCAN_TUPLES_MARGIN times
    the rows expected before `candidates` pass its filter (candidates divided
    by the share of the channel in scope)."""
    share = scope.size / max(scope.channel_size, scope.size, 1)
    expected = candidates / max(share, 1e-9)
    tuples = int(expected * SCAN_TUPLES_MARGIN)
    return VectorPlan(
        exact=False,
        max_scan_tuples=min(MAX_SCAN_TUPLES, max(MIN_SCAN_TUPLES, tuples)),
    )


def vector_steps(
    scope: Scope,
    vector: list[float],
    model_name: str,
    candidates: int,
    preload: Preload | None = None,
) -> Leg:
    """The vector leg as steps (run_legs): cosine ranking and the
    VectorStrategy that produced it, exact over small scopes, an iterative
    HNSW scan over large ones (plan_vector_leg). With `preload`, the best
    chunks' rows come along."""
    plan = plan_vector_leg(scope, candidates)
    statement = _nearest_statement(scope, vector, model_name, candidates, plan)
    ranked = _ranked_by_distance(_rows((yield _statement(statement, preload)), preload))
    if plan.exact:
        return VectorStrategy.EXACT, ranked
    # More rows than candidates pass the filters here, so a short answer means
    # the graph walk gave up early: rank exactly instead of returning it.
    if len(ranked) >= min(candidates, scope.size):
        return VectorStrategy.HNSW, ranked
    statement = _nearest_statement(
        scope, vector, model_name, candidates, VectorPlan(True)
    )
    ranked = _ranked_by_distance(_rows((yield _statement(statement, preload)), preload))
    return VectorStrategy.HNSW_THEN_EXACT, ranked


def vector_statement(
    scope: Scope,
    vector: list[float],
    model_name: str,
    candidates: int,
    plan: VectorPlan,
) -> tuple[list[str], str, list]:
    """The vector leg's SET LOCALs, its SELECT and the SELECT's parameters.

    Ordered by the bare distance the HNSW index walks, or (exact) by an
    expression the index can't serve, so PostgreSQL ranks every row the scope
    selects, starting from the filter's documents."""
    if plan.exact:
        where, params = scope.condition
        distance = "c.embedding <=> q.v"
        source = f"{CHUNKS} c, (SELECT %s::vector AS v) q"
        order = "(c.embedding <=> q.v) + 0"
        hnsw = []
    else:
        where, params = scope.checked_per_row
        distance = "c.embedding <=> %s::vector"
        source = f"{CHUNKS} c"
        order = "distance"
        hnsw = _hnsw_settings(candidates, plan.max_scan_tuples)
    # float32 values: nine significant digits say each exactly, in half the text.
    literal = "[" + ",".join(f"{value:.9g}" for value in vector) + "]"
    select = (
        f"SELECT c.id, {distance} AS distance FROM {source} "
        f"WHERE {where} AND c.embedding IS NOT NULL AND c.embedding_model = %s "
        f"ORDER BY {order} LIMIT %s"
    )
    return hnsw, select, [literal, *params, model_name, candidates]


def _nearest(
    scope: Scope,
    vector: list[float],
    model_name: str,
    candidates: int,
    plan: VectorPlan,
) -> list[tuple[int, float]]:
    """Chunks by cosine distance to `vector`, best first, as `plan` ranks them."""
    statement = _nearest_statement(scope, vector, model_name, candidates, plan)

    def steps() -> Leg:
        return _ranked_by_distance((yield statement))

    return run_legs(steps)[0]


def _nearest_statement(
    scope: Scope,
    vector: list[float],
    model_name: str,
    candidates: int,
    plan: VectorPlan,
) -> Statement:
    hnsw, select, params = vector_statement(scope, vector, model_name, candidates, plan)
    return Statement(select, params, tuple(hnsw))


def _ranked_by_distance(rows: list[tuple]) -> list[tuple[int, float]]:
    # relaxed_order iterative scans may return rows slightly out of order.
    ranked = sorted(rows, key=lambda row: row[1])
    return [(chunk_id, 1.0 - distance) for chunk_id, distance in ranked]


# hnsw.ef_search of an iterative walk. On the synthetic corpus shaped like real
# embeddings (benchmarks/scale.py, 400k chunks) 400 raised the walk's recall@50
# against an exact ranking from 0.72 to 0.82 unfiltered and from 0.62 to 0.82
# under a ~50% filter; on SciFact's real abstracts it doubled the vector leg's
# p50 (5.9 -> 12.3 ms without the query embedding) for no gain (hybrid nDCG@10
# 0.727 -> 0.725), so walks stay at 100. With the m 32 index (documents 0021)
# 200 raised the synthetic corpus's vector recall@50 from 0.69 to 0.74 unfiltered
# and 0.85 to 0.92 under a ~50% filter, not at 5% (0.948 both), for 1.2-2x the
# latency (docs/scaling.md); on SciFact the walk already finds 0.994 of the
# exact 50 at 100 (benchmarks/walk_recall.py).
WALK_EF_SEARCH = 100
MAX_EF_SEARCH = 1000


def _hnsw_settings(candidates: int, max_scan_tuples: int) -> list[str]:
    """SET LOCAL statements for an iterative HNSW scan that can return
    `candidates` rows after filtering, visiting at most `max_scan_tuples`.

    ef_search = WALK_EF_SEARCH, or the candidates asked for when more, at most
    pgvector's 1000: the iterative scan goes on past it when filters drop
    rows."""
    ef_search = min(MAX_EF_SEARCH, max(WALK_EF_SEARCH, int(candidates)))
    return [
        f"SET LOCAL hnsw.ef_search = {ef_search}",
        "SET LOCAL hnsw.iterative_scan = relaxed_order",
        f"SET LOCAL hnsw.max_scan_tuples = {int(max_scan_tuples)}",
    ]
