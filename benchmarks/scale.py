"""Retrieval latency with at least 1,000,000 chunks (synthetic rows).

    .venv/bin/python benchmarks/scale.py [--chunks 1000000] [--queries 100]
        [--modes keyword,vector,hybrid] [--calibrate] [--sizes]
    [--shape [--data ../shared/data/scifact]] [--ef-search 100,200,400]
    [--filter-read-limit N|all]

Grows the chunk table of the benchmark database (QUIRE_DATABASE_NAME, default
quire_scale) to at least --chunks rows with a synthetic channel: documents with a
Zipf-distributed vocabulary, vectors from a hierarchy of topics shaped like real
sentence embeddings (benchmarks/scale_vectors.py) and metadata, bulk-loaded with
COPY on Django's connection, keyword statistics filled like ingestion fills them.
Then it times documents.search.service.retrieve_chunks per mode, with and without
embedding the query (4 words of a chunk, none of them in more than 5% of
chunks), without a filter and with filters keeping 0.5%, 5% and about 50% of
the documents; prints the vector leg's plan for each (documents.search.legs:
exact ranking or iterative HNSW scan), recall@50 against exact search (the
vector leg's top 50, and the hybrid top 50 against hybrid with an exact vector
leg), and whether every filtered search returned the number of results asked
for. Rows are kept for reruns.

--calibrate times the vector leg's two plans over filters keeping from 2,000
to 100,000 chunks (what SEARCH_EXACT_ROWS_PER_VISIT is set from); --sizes
prints the table, index and per-column sizes (docs/scaling.md); --shape prints
the synthetic vectors' nearest-neighbour distance profile beside SciFact's real
embeddings (--data, embedded once and cached like benchmarks/halfvec.py does),
without touching the database; --ef-search times the vector leg's walk at
each hnsw.ef_search given, with its recall@50 against exact search, at the
widths that walk.
"""

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
os.environ.setdefault("QUIRE_DATABASE_NAME", "quire_scale")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.db.models import F  # noqa: E402
from scale_vectors import (  # noqa: E402
    VectorSpace,
    profile,
    query_offsets,
    siblings,
)

from documents.filters import compile_filter  # noqa: E402
from documents.ingestion import embeddings  # noqa: E402
from documents.models import (  # noqa: E402
    Channel,
    Chunk,
    Document,
    KeywordStatistics,
    Page,
    TermStatistic,
)
from documents.search import legs, terms  # noqa: E402
from documents.search.service import retrieve_chunks  # noqa: E402

# A new slug whenever the synthetic corpus changes shape: rows of an older
# corpus in the same database would be measured as if they were this one's.
SLUG = "scale-siblings"
OLD_SLUGS = ("scale-synthetic", "scale-hierarchical")
CHUNKS_PER_DOCUMENT = 20
WORDS_PER_CHUNK = (40, 90)
VOCABULARY = 40_000
DIMENSIONS = 384
RARE = "rare"  # 0.5% of documents: the selective filter
COMMON = "common"  # 5% of documents: the moderately selective filter
SEED = 7
STOP_WORD_SHARE = 0.05
GROW_LOCK = 26  # pg_advisory_lock key held while the corpus grows (issue 26)


def vocabulary(rng: np.random.Generator) -> list[str]:
    consonants = list("bdfgklmnprstvz")
    vowels = list("aeiou")
    words: set[str] = set()
    while len(words) < VOCABULARY:
        syllables = rng.integers(2, 5)
        words.add(
            "".join(
                consonants[rng.integers(len(consonants))] + vowels[rng.integers(5)]
                for _ in range(syllables)
            )
            + consonants[rng.integers(len(consonants))]
        )
    return sorted(words)


def lexemes_of(words: list[str]) -> list[str]:
    """The english-configuration lexeme of each word (what search_vector holds)."""
    lexemes = []
    for counts in terms.lexeme_counts(words):
        lexemes.append(next(iter(counts), ""))
    return lexemes


def category(rng: np.random.Generator) -> str:
    roll = rng.random()
    if roll < 0.005:
        return RARE
    if roll < 0.055:
        return COMMON
    return f"topic-{rng.integers(40):02d}"


def grow(target: int, rng: np.random.Generator) -> Channel:
    from pgvector.psycopg import register_vector

    from documents.services.channels import create_channel

    old = Channel.objects.filter(slug__in=OLD_SLUGS).first()
    if old is not None:
        sys.exit(
            f"{connection.settings_dict['NAME']} holds the older synthetic corpus "
            f"({old.slug}): use another QUIRE_DATABASE_NAME, or drop that database."
        )
    # Two runs against one database would both see the rows missing and both
    # load them (twice the chunks asked for, and the second run's index rebuild
    # failing on the first's): the second waits here until the first is done.
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s)", [GROW_LOCK])
    channel = Channel.objects.filter(slug=SLUG).first()
    if channel is None:
        channel = create_channel(
            slug=SLUG,
            name="Scale benchmark",
            fields=[
                {"name": "category", "type": "string", "filterable": True},
                {"name": "year", "type": "number", "filterable": True},
            ],
        )
    missing = target - Chunk.objects.count()
    if missing <= 0:
        return channel
    documents_needed = -(-missing // CHUNKS_PER_DOCUMENT)
    print(
        f"adding {documents_needed * CHUNKS_PER_DOCUMENT} synthetic chunks", flush=True
    )
    words = vocabulary(np.random.default_rng(SEED))
    # Draws go on from the rows already loaded: with the seed alone, growing a
    # corpus loaded the same chunks again (quire_scale200k's second 200,000
    # chunks were copies of its first, vectors and texts).
    rng = np.random.default_rng([SEED, Chunk.objects.count()])
    word_lexemes = lexemes_of(words)
    ranks = np.arange(1, VOCABULARY + 1, dtype=np.float64)
    zipf = 1.0 / ranks**1.07
    zipf /= zipf.sum()
    space = VectorSpace(SEED, DIMENSIONS)
    embedder_name = embeddings.get_embedder().model_name
    lengths_total = 0
    frequencies: Counter = Counter()
    started = time.perf_counter()
    connection.ensure_connection()
    register_vector(connection.connection)
    with connection.cursor() as cursor:
        indexes = _drop_chunk_indexes(cursor)
    batch_documents = 2_000
    stats = KeywordStatistics.objects.filter(channel=channel).first()
    average = (
        stats.average_length
        if stats and stats.chunk_count
        else float(sum(WORDS_PER_CHUNK)) / 2
    )
    for first in range(0, documents_needed, batch_documents):
        count = min(batch_documents, documents_needed - first)
        with transaction.atomic():
            documents = Document.objects.bulk_create(
                [
                    Document(
                        channel=channel,
                        title=f"Synthetic {first + i}",
                        file=f"channels/{channel.pk}/originals/s{first + i}.txt",
                        original_filename=f"synthetic-{first + i}.txt",
                        content_type="text/plain",
                        metadata={
                            "category": category(rng),
                            "year": int(rng.integers(1990, 2025)),
                        },
                        status=Document.Status.READY,
                        page_count=1,
                        chunk_count=CHUNKS_PER_DOCUMENT,
                    )
                    for i in range(count)
                ],
                batch_size=1000,
            )
            pages = Page.objects.bulk_create(
                [Page(document=d, number=1, text="") for d in documents],
                batch_size=1000,
            )
            rows = []
            chunk_total = count * CHUNKS_PER_DOCUMENT
            lengths = rng.integers(*WORDS_PER_CHUNK, size=chunk_total)
            picks = rng.choice(VOCABULARY, size=int(lengths.sum()), p=zipf)
            ends = np.cumsum(lengths)
            vectors = space.chunk_vectors(rng, count, CHUNKS_PER_DOCUMENT)
            for index in range(chunk_total):
                document = documents[index // CHUNKS_PER_DOCUMENT]
                page = pages[index // CHUNKS_PER_DOCUMENT]
                chunk_words = picks[ends[index] - lengths[index] : ends[index]]
                text = " ".join([words[i] for i in chunk_words])
                counts = Counter([word_lexemes[i] for i in chunk_words])
                counts.pop("", None)
                vector, term_count = terms.weight_vector(counts, average)
                lengths_total += term_count
                frequencies.update(counts.keys())
                rows.append(
                    (
                        document.pk,
                        page.pk,
                        channel.pk,
                        1,
                        index % CHUNKS_PER_DOCUMENT,
                        text,
                        vectors[index],
                        embedder_name,
                        vector,
                        term_count,
                    )
                )
            with connection.cursor() as cursor:
                with cursor.cursor.copy(
                    f"COPY {Chunk._meta.db_table} (document_id, page_id, channel_id, "
                    'page_number, "order", text, embedding, embedding_model, terms, '
                    "term_count) FROM STDIN WITH (FORMAT BINARY)"
                ) as copy:
                    copy.set_types(
                        [
                            "bigint",
                            "bigint",
                            "bigint",
                            "integer",
                            "integer",
                            "text",
                            "vector",
                            "varchar",
                            "sparsevec",
                            "integer",
                        ]
                    )
                    for row in rows:
                        copy.write_row(row)
        done = first + count
        elapsed = time.perf_counter() - started
        print(f"  {done * CHUNKS_PER_DOCUMENT} chunks in {elapsed:.0f} s", flush=True)
    _add_statistics(
        channel, documents_needed * CHUNKS_PER_DOCUMENT, lengths_total, frequencies
    )
    print("rebuilding indexes", flush=True)
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '6GB'")
        cursor.execute("SET max_parallel_maintenance_workers = 1")
        for definition in indexes:
            # IF NOT EXISTS: a load that was interrupted after one index was
            # rebuilt still gets the other back.
            cursor.execute(
                definition.replace("CREATE INDEX ", "CREATE INDEX IF NOT EXISTS ", 1)
            )
        cursor.execute(f"VACUUM ANALYZE {Chunk._meta.db_table}")
        cursor.execute(f"VACUUM ANALYZE {Document._meta.db_table}")
    print(f"indexes rebuilt in {time.perf_counter() - started:.0f} s", flush=True)
    return channel


REBUILT_INDEXES = ("chunk_search_vector_gin", "chunk_embedding_hnsw")


def _drop_chunk_indexes(cursor) -> list[str]:
    """Drop the GIN and HNSW indexes (rebuilt once after loading, which is far
    faster than maintaining them row by row); the SQL that makes them again,
    from the model, so a load that was interrupted still gets them back."""
    for name in REBUILT_INDEXES:
        cursor.execute(f'DROP INDEX IF EXISTS "{name}"')
    with connection.schema_editor(collect_sql=True) as editor:
        for index in Chunk._meta.indexes:
            if index.name in REBUILT_INDEXES:
                editor.add_index(Chunk, index)
    return list(editor.collected_sql)


def _add_statistics(channel, chunks: int, lengths: int, frequencies: Counter) -> None:
    with transaction.atomic():
        stats, _ = KeywordStatistics.objects.select_for_update().get_or_create(
            channel=channel
        )
        stats.chunk_count += chunks
        stats.term_total += lengths
        stats.save()
        existing = dict(
            TermStatistic.objects.filter(channel=channel).values_list(
                "lexeme", "chunk_frequency"
            )
        )
        TermStatistic.objects.filter(channel=channel).delete()
        for lexeme, count in existing.items():
            frequencies[lexeme] += count
        TermStatistic.objects.bulk_create(
            [
                TermStatistic(channel=channel, lexeme=lexeme, chunk_frequency=count)
                for lexeme, count in sorted(frequencies.items())
            ],
            batch_size=5000,
        )


class FixedEmbedder:
    """Query vectors chosen before timing (no model in the timed path)."""

    def __init__(self, model_name: str, vectors: dict[str, list[float]]):
        self.model_name = model_name
        self.dimensions = DIMENSIONS
        self._vectors = vectors

    def embed_query(self, text: str) -> list[float]:
        return self._vectors[text]


def filtered_documents(channel, metadata_filter: dict | None):
    """The ready documents a search with `metadata_filter` covers."""
    documents = Document.objects.for_channel(channel).ready()
    return documents.filter(compile_filter(channel, metadata_filter))


def scope_of(channel, metadata_filter: dict | None) -> legs.Scope:
    """The scope retrieve_chunks builds for `metadata_filter`."""
    return legs.Scope(
        channel,
        filtered_documents(channel, metadata_filter),
        restricted=bool(metadata_filter),
    )


def sample_queries(channel, rng, count: int, metadata_filter: dict | None):
    ids = list(
        filtered_documents(channel, metadata_filter).values_list("id", flat=True)
    )
    # The synthetic head words are in most chunks, like the stop words the english
    # configuration drops from real text: queries don't use them.
    total = Chunk.objects.for_channel(channel).count()
    stop_lexemes = set(
        TermStatistic.objects.filter(
            channel=channel, chunk_frequency__gt=STOP_WORD_SHARE * total
        ).values_list("lexeme", flat=True)
    )
    space = VectorSpace(SEED, DIMENSIONS)
    queries = {}
    for index in rng.choice(len(ids), size=min(count, len(ids)), replace=False):
        text, embedding = Chunk.objects.filter(
            document_id=ids[int(index)], order=int(rng.integers(CHUNKS_PER_DOCUMENT))
        ).values_list("text", "embedding")[0]
        words = sorted(set(text.split()))
        lexemes = terms.lexeme_counts(words)
        words = [
            w for w, c in zip(words, lexemes, strict=True) if not set(c) & stop_lexemes
        ]
        picked = [words[i] for i in rng.choice(len(words), size=4, replace=False)]
        queries[" ".join(picked)] = space.query_near(rng, embedding).tolist()
    return queries


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def exact_vector_ranking(scope, vector: list[float], model_name: str, k: int):
    """The k nearest chunks in scope by a full sort (what recall is measured
    against)."""
    plan = legs.VectorPlan(exact=True)
    return [
        chunk_id for chunk_id, _ in legs._nearest(scope, vector, model_name, k, plan)
    ]


def recall(found: list[int], expected: list[int]) -> float:
    return len(set(found) & set(expected)) / max(1, len(expected))


def measure(channel, queries, metadata_filter, label: str, check: int, modes) -> None:
    real = embeddings.get_embedder()
    real.embed_query("warm up")
    original = embeddings.get_embedder
    fixed = FixedEmbedder(real.model_name, queries)
    scope = scope_of(channel, metadata_filter)
    plan = legs.plan_vector_leg(scope, channel.retriever_candidates)
    scope.read_all()  # the size printed, not the lower bound a walk plans with
    how = (
        "exact ranking"
        if plan.exact
        else f"iterative HNSW, max_scan_tuples {plan.max_scan_tuples}"
    )
    print(
        f"{label}: {scope.size} of {scope.channel_size} chunks in scope "
        f"({100 * scope.size / max(1, scope.channel_size):.1f}%); vector leg: {how}",
        flush=True,
    )
    for mode in modes:
        channel.retriever_mode = mode
        without, with_embedding, short, recalls = [], [], 0, []
        for query in queries:
            embeddings.get_embedder = lambda: fixed
            try:
                # Untimed first call: both timed runs then see the same warm cache.
                retrieve_chunks(channel, query, metadata_filter=metadata_filter)
                started = time.perf_counter()
                retrieve_chunks(channel, query, metadata_filter=metadata_filter)
                without.append(time.perf_counter() - started)
                if mode != "keyword":
                    found = retrieve_chunks(
                        channel, query, metadata_filter=metadata_filter, limit=check
                    )
                    short += len(found) < check
                    recalls.append(
                        _recall_at(
                            channel, scope, metadata_filter, query, found, mode, check
                        )
                    )
            finally:
                embeddings.get_embedder = original
            started = time.perf_counter()
            retrieve_chunks(
                channel,
                query,
                metadata_filter=metadata_filter,
            )
            with_embedding.append(time.perf_counter() - started)
        line = (
            f"{label} {mode}: without embedding p50 "
            f"{percentile(without, 0.5) * 1000:.1f} ms p95 "
            f"{percentile(without, 0.95) * 1000:.1f} ms; with embedding p50 "
            f"{percentile(with_embedding, 0.5) * 1000:.1f} ms p95 "
            f"{percentile(with_embedding, 0.95) * 1000:.1f} ms"
        )
        if mode != "keyword":
            line += (
                f"; recall@{check} vs exact mean {np.mean(recalls):.3f} "
                f"min {min(recalls):.2f}"
                f"; {len(queries) - short}/{len(queries)} returned {check} results"
            )
        print(line, flush=True)
    channel.retriever_mode = "hybrid"


def _recall_at(channel, scope, metadata_filter, query, found, mode, check) -> float:
    """recall@check of a search's results against the same search with an
    exact vector leg: for the vector mode the exact nearest chunks in scope,
    for hybrid the fusion of the same keyword leg with the exact ranking."""
    if mode == "vector":
        embedder = embeddings.get_embedder()
        expected = exact_vector_ranking(
            scope, embedder.embed_query(query), embedder.model_name, check
        )
    else:
        threshold = settings.SEARCH_EXACT_ROWS_PER_VISIT
        settings.SEARCH_EXACT_ROWS_PER_VISIT = 10.0**12
        try:
            expected = [
                r.chunk_id
                for r in retrieve_chunks(
                    channel, query, metadata_filter=metadata_filter, limit=check
                )
            ]
        finally:
            settings.SEARCH_EXACT_ROWS_PER_VISIT = threshold
    return recall([r.chunk_id for r in found], expected)


WIDTHS = [
    ("no filter", None),
    ("filter 0.5% of documents", {"category": RARE}),
    ("filter 5% of documents", {"category": COMMON}),
    # Years are uniform over 1990-2024: 2008 onwards is 17 of 35.
    ("filter ~50% of documents", {"year": {"min": 2008}}),
]


def calibrate(channel, rng, count: int) -> None:
    """Median time of each vector-leg plan over filters keeping a range of
    chunk counts (documents whose id is a multiple of a step), and the walk's
    recall@50 against the exact ranking."""
    model = embeddings.get_embedder().model_name
    candidates = channel.retriever_candidates
    queries = list(sample_queries(channel, rng, count, None).values())
    everything = Document.objects.for_channel(channel).ready()
    channel_size = sum(everything.values_list("chunk_count", flat=True))
    for wanted in (2_000, 5_000, 10_000, 20_000, 50_000, 100_000):
        if wanted * 2 > channel_size:
            break
        step = max(1, round(channel_size / wanted))
        documents = everything.alias(step=F("id") % step).filter(step=0)
        scope = legs.Scope(channel, documents, restricted=True)
        walk = legs.walk_plan(scope, candidates)
        times = {"exact": [], "walk": []}
        recalls, short = [], 0
        for vector in queries:
            for name, plan in (("exact", legs.VectorPlan(exact=True)), ("walk", walk)):
                legs._nearest(scope, vector, model, candidates, plan)
                started = time.perf_counter()
                ranked = legs._nearest(scope, vector, model, candidates, plan)
                times[name].append(time.perf_counter() - started)
                if name == "exact":
                    exact = [chunk_id for chunk_id, _ in ranked[:50]]
                else:
                    short += len(ranked) < candidates
                    recalls.append(recall([c for c, _ in ranked[:50]], exact))
        print(
            f"calibrate {scope.size} chunks in scope "
            f"({100 * scope.size / scope.channel_size:.1f}%, the walk expects "
            f"{candidates * scope.channel_size / scope.size:.0f} visits): exact p50 "
            f"{percentile(times['exact'], 0.5) * 1000:.1f} ms p95 "
            f"{percentile(times['exact'], 0.95) * 1000:.1f} ms; walk "
            f"(max_scan_tuples {walk.max_scan_tuples}) p50 "
            f"{percentile(times['walk'], 0.5) * 1000:.1f} ms p95 "
            f"{percentile(times['walk'], 0.95) * 1000:.1f} ms, recall@50 "
            f"{np.mean(recalls):.3f}, {short} short",
            flush=True,
        )


def walk_sweep(channel, rng, count: int, ef_searches: list[int]) -> None:
    """The vector leg's walk at each hnsw.ef_search in `ef_searches` (in place
    of legs.WALK_EF_SEARCH) over the same queries, per filter width the walk
    serves: p50 of the leg alone and recall@50 against the exact ranking."""
    model = embeddings.get_embedder().model_name
    candidates = channel.retriever_candidates
    shipped = legs.WALK_EF_SEARCH
    for label, metadata_filter in WIDTHS:
        scope = scope_of(channel, metadata_filter)
        if legs.plan_vector_leg(scope, candidates).exact:
            continue
        walk = legs.walk_plan(scope, candidates)
        vectors = list(sample_queries(channel, rng, count, metadata_filter).values())
        exact = [exact_vector_ranking(scope, v, model, 50) for v in vectors]
        for ef_search in ef_searches:
            legs.WALK_EF_SEARCH = ef_search
            times, recalls = [], []
            try:
                for vector, expected in zip(vectors, exact, strict=True):
                    legs._nearest(scope, vector, model, candidates, walk)
                    started = time.perf_counter()
                    ranked = legs._nearest(scope, vector, model, candidates, walk)
                    times.append(time.perf_counter() - started)
                    recalls.append(recall([c for c, _ in ranked[:50]], expected))
            finally:
                legs.WALK_EF_SEARCH = shipped
            print(
                f"walk {label}, ef_search {ef_search}: vector leg p50 "
                f"{percentile(times, 0.5) * 1000:.1f} ms p95 "
                f"{percentile(times, 0.95) * 1000:.1f} ms; recall@50 mean "
                f"{np.mean(recalls):.3f} min {min(recalls):.2f}; "
                f"{sum(r < 0.1 for r in recalls)} of {len(recalls)} under 0.1",
                flush=True,
            )


def print_sizes() -> None:
    """Bytes on disk of the chunk table, its indexes and its columns."""
    table = Chunk._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*), pg_relation_size('{table}'), "
            f"pg_total_relation_size('{table}'), pg_indexes_size('{table}'), "
            f"pg_relation_size(reltoastrelid) FROM {table}, pg_class "
            f"WHERE pg_class.relname = '{table}' GROUP BY reltoastrelid"
        )
        rows, heap, total, indexes, toast = cursor.fetchone()
        print(
            f"sizes: {rows} chunks; table {heap / rows:.0f} B/chunk, toast "
            f"{toast / rows:.0f} B/chunk, indexes {indexes / rows:.0f} B/chunk, "
            f"total {total / rows:.0f} B/chunk ({total / 2**30:.2f} GiB)",
            flush=True,
        )
        cursor.execute(
            "SELECT indexrelid::regclass::text, pg_relation_size(indexrelid) "
            "FROM pg_index WHERE indrelid = %s::regclass ORDER BY 2 DESC",
            [table],
        )
        for name, size in cursor.fetchall():
            print(f"sizes: index {name} {size / rows:.0f} B/chunk", flush=True)
        cursor.execute(
            "SELECT avg(pg_column_size(embedding)), avg(pg_column_size(terms)), "
            "avg(pg_column_size(search_vector)), avg(pg_column_size(text)), "
            "avg(octet_length(text)), "
            "avg(pg_column_size(embedding::halfvec)) "
            f"FROM {table} TABLESAMPLE SYSTEM (1)"
        )
        names = (
            "embedding",
            "terms",
            "search_vector",
            "text (stored)",
            "text (raw)",
            "embedding::halfvec",
        )
        for name, size in zip(names, cursor.fetchone(), strict=True):
            print(f"sizes: column {name} {float(size or 0):.0f} B/chunk", flush=True)


SHAPE_SAMPLE = 200_000
SHAPE_QUERIES = 300
# SciFact abstracts embedded for --shape: every abstract judged for a test
# query, then others at random up to this many (embedding all 5,183 takes a
# quarter of an hour of CPU).
SHAPE_SCIFACT_CORPUS = 1_000


def print_shape(chunks: int, data: Path | None) -> None:
    """The nearest-neighbour distance profile (scale_vectors.profile) of the
    synthetic corpus, drawn afresh from the same space (at most SHAPE_SAMPLE
    chunks), and, with `data`, of SciFact's real embeddings (its test queries
    against SHAPE_SCIFACT_CORPUS abstracts that include every judged one)
    beside a random synthetic sample of the same size with the same number
    of queries; then, for both, how far a query sits from the passage it asks
    about (scale_vectors.query_offsets: what QUERY_SPREAD is set from)."""
    space = VectorSpace(SEED, DIMENSIONS)
    rng = np.random.default_rng(SEED + 1)
    size = min(chunks, SHAPE_SAMPLE)
    documents = -(-size // CHUNKS_PER_DOCUMENT)
    corpus = space.chunk_vectors(rng, documents, CHUNKS_PER_DOCUMENT)
    # A query's own passage stays in the corpus: it is the relevant document.
    queries, passages = _queries_near(space, rng, corpus, SHAPE_QUERIES)
    print(profile(corpus, queries).line("shape synthetic"), flush=True)
    print(
        query_offsets(corpus, queries, passages).line("offsets synthetic"),
        flush=True,
    )
    if data is None:
        return
    import halfvec

    chosen, texts, judged = _scifact_sample(data)
    embedder = embeddings.get_embedder()
    real = np.asarray(halfvec.corpus_vectors(chosen, embedder), dtype=np.float32)
    asked = [qid for qid in sorted(judged) if qid in texts]
    real_queries = np.asarray(
        [embedder.embed_query(texts[qid]) for qid in asked], dtype=np.float32
    )
    print(profile(real, real_queries).line("shape SciFact (MiniLM)"), flush=True)
    position = {str(item["_id"]): index for index, item in enumerate(chosen)}
    pairs = [
        (number, position[doc])
        for number, qid in enumerate(asked)
        for doc, score in sorted(judged[qid].items())
        if score > 0
    ]
    print(
        query_offsets(
            real,
            real_queries[[query for query, _ in pairs]],
            np.array([passage for _, passage in pairs]),
        ).line("offsets SciFact (MiniLM)"),
        flush=True,
    )
    sample = corpus[rng.choice(len(corpus), size=len(real), replace=False)]
    # A query about every vector of the sample for the offsets (their median
    # over 300 queries moved by 0.1-0.2 from one draw to the next), the first
    # as many as SciFact has for the profile.
    queries, passages = _queries_near(space, rng, sample, len(sample))
    print(
        profile(sample, queries[: len(real_queries)]).line(
            "shape synthetic, SciFact's sizes"
        ),
        flush=True,
    )
    print(
        query_offsets(sample, queries, passages).line(
            "offsets synthetic, SciFact's sizes"
        ),
        flush=True,
    )


def _scifact_sample(data: Path):
    """SHAPE_SCIFACT_CORPUS SciFact abstracts (every judged one, then others
    at random), its query texts and judgements."""
    import scifact

    beir, texts, judged = scifact.load_beir(data)
    relevant = {doc for docs in judged.values() for doc in docs}
    chosen = [item for item in beir if str(item["_id"]) in relevant]
    others = [item for item in beir if str(item["_id"]) not in relevant]
    # Its own draw: the abstracts (and so halfvec's cache of their vectors,
    # named by their count) are the same whatever --chunks is.
    picks = np.random.default_rng(SEED + 2).choice(
        len(others), SHAPE_SCIFACT_CORPUS - len(chosen), replace=False
    )
    for index in sorted(picks):
        chosen.append(others[index])
    return chosen, texts, judged


def print_siblings(data: Path | None) -> None:
    """Where a document's chunks sit among other documents' chunks
    (scale_vectors.siblings) in the synthetic corpus at the benchmark's 20
    chunks a document, and, with `data`, in SciFact's abstracts chunked and
    embedded as ingestion does (settings.CHUNK_SIZE / CHUNK_OVERLAP, each
    chunk with its title) beside synthetic documents cut to the same chunk
    counts: what CHUNK_SPREAD is set from."""
    space = VectorSpace(SEED, DIMENSIONS)
    rng = np.random.default_rng(SEED + 3)
    documents = SHAPE_SAMPLE // CHUNKS_PER_DOCUMENT
    corpus = space.chunk_vectors(rng, documents, CHUNKS_PER_DOCUMENT)
    owners = np.repeat(np.arange(documents), CHUNKS_PER_DOCUMENT)
    print(siblings(corpus, owners).line("siblings synthetic"), flush=True)
    if data is None:
        return
    chosen, _, _ = _scifact_sample(data)
    for size, overlap in ((settings.CHUNK_SIZE, settings.CHUNK_OVERLAP), (300, 0)):
        real, owners = _scifact_chunk_vectors(chosen, size, overlap)
        print(
            siblings(real, owners).line(f"siblings SciFact (MiniLM, {size} chars)"),
            flush=True,
        )
        counts = np.bincount(owners)
        drawn = space.chunk_vectors(rng, len(counts), max(counts.max(), 1))
        keep = (np.arange(len(drawn)) % counts.max()) < np.repeat(counts, counts.max())
        print(
            siblings(drawn[keep], np.repeat(np.arange(len(counts)), counts)).line(
                f"siblings synthetic, SciFact's counts at {size} chars"
            ),
            flush=True,
        )


def _scifact_chunk_vectors(chosen: list[dict], size: int, overlap: int):
    """The chunks of `chosen` as ingestion cuts and embeds them (cached in
    DATA_DIR), and the index of each chunk's abstract."""
    from documents.ingestion.chunking import chunk_pages
    from documents.ingestion.context import retrieval_text
    from documents.ingestion.parsed import ParsedPage

    embedder = embeddings.get_embedder()
    name = embedder.model_name.replace("/", "-")
    cache = Path(settings.DATA_DIR) / f"chunks-{name}-{len(chosen)}-{size}-{overlap}"
    if cache.with_suffix(".npz").exists():
        saved = np.load(cache.with_suffix(".npz"))
        return saved["vectors"], saved["owners"]
    texts, owners = [], []
    for index, item in enumerate(chosen):
        for chunk in chunk_pages(
            [ParsedPage(number=1, text=item["text"])],
            chunk_size=size,
            chunk_overlap=overlap,
            title=(item.get("title") or "").strip(),
        ):
            texts.append(retrieval_text(chunk.context, chunk.text))
            owners.append(index)
    started = time.perf_counter()
    vectors = np.asarray(embedder.embed_documents(texts), dtype=np.float32)
    print(
        f"embedded {len(texts)} chunks in {time.perf_counter() - started:.0f} s",
        file=sys.stderr,
    )
    owners = np.asarray(owners)
    np.savez(cache, vectors=vectors, owners=owners)
    return vectors, owners


def _queries_near(space, rng, corpus: np.ndarray, count: int):
    """`count` queries, each near a distinct corpus vector, and those vectors'
    indexes."""
    picked = rng.choice(len(corpus), size=count, replace=False)
    queries = np.stack([space.query_near(rng, corpus[index]) for index in picked])
    return queries, picked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--modes", default="keyword,vector,hybrid")
    parser.add_argument("--calibrate", action="store_true")
    parser.add_argument("--sizes", action="store_true")
    parser.add_argument("--shape", action="store_true")
    parser.add_argument(
        "--ef-search",
        default="",
        help="comma-separated hnsw.ef_search values: sweep the walk's recall",
    )
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument(
        "--filter-read-limit",
        default="",
        help="documents.search.legs.FILTER_READ_LIMIT for this run ('all': none)",
    )
    args = parser.parse_args()
    if args.filter_read_limit:
        limit = args.filter_read_limit
        legs.FILTER_READ_LIMIT = None if limit == "all" else int(limit)
        print(f"FILTER_READ_LIMIT {legs.FILTER_READ_LIMIT}", flush=True)
    if args.shape:
        print_siblings(args.data)
        print_shape(args.chunks, args.data)
        return
    call_command("migrate", verbosity=0, interactive=False)
    rng = np.random.default_rng(SEED)
    channel = grow(args.chunks, rng)
    total = Chunk.objects.count()
    mine = Chunk.objects.for_channel(channel).count()
    print(f"chunk table: {total} rows ({mine} in the synthetic channel)", flush=True)
    if args.sizes:
        print_sizes()
    if args.calibrate:
        calibrate(channel, rng, args.queries)
        return
    if args.ef_search:
        walk_sweep(
            channel, rng, args.queries, [int(v) for v in args.ef_search.split(",")]
        )
        return
    modes = [mode.strip() for mode in args.modes.split(",") if mode.strip()]
    for label, metadata_filter in WIDTHS:
        queries = sample_queries(channel, rng, args.queries, metadata_filter)
        measure(channel, queries, metadata_filter, label, 50, modes)


if __name__ == "__main__":
    main()
