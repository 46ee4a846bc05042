"""Retrieval latency with at least 1,000,000 chunks (synthetic rows).

    .venv/bin/python benchmarks/scale.py [--chunks 1000000]

Grows the chunk table of the benchmark database (QUIRE_DATABASE_NAME, default
quire_scale) to at least --chunks rows with a synthetic channel: documents with a
Zipf-distributed vocabulary, clustered unit vectors and metadata, bulk-loaded with
COPY on Django's connection, keyword statistics filled like ingestion fills them.
Then it times documents.search.service.retrieve_chunks per mode, with and without
embedding the query (4 words of a chunk, none of them in more than 5% of
chunks), without a filter, with a selective filter (exact scan path)
and a moderately selective one (iterative HNSW path), and checks that filtered
searches still return the number of results asked for. Rows are kept for reruns.
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
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402

from documents.ingestion import embeddings  # noqa: E402
from documents.models import (  # noqa: E402
    Channel,
    Chunk,
    Document,
    KeywordStatistics,
    Page,
    TermStatistic,
)
from documents.search import terms  # noqa: E402
from documents.search.service import retrieve_chunks  # noqa: E402

SLUG = "scale-synthetic"
CHUNKS_PER_DOCUMENT = 20
WORDS_PER_CHUNK = (40, 90)
VOCABULARY = 40_000
CLUSTERS = 2_000
DIMENSIONS = 384
RARE = "rare"  # 0.5% of documents: the selective filter
COMMON = "common"  # 5% of documents: the moderately selective filter
SEED = 7
STOP_WORD_SHARE = 0.05


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
    words = vocabulary(rng)
    word_lexemes = lexemes_of(words)
    ranks = np.arange(1, VOCABULARY + 1, dtype=np.float64)
    zipf = 1.0 / ranks**1.07
    zipf /= zipf.sum()
    centroids = rng.standard_normal((CLUSTERS, DIMENSIONS)).astype(np.float32)
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
            clusters = rng.integers(CLUSTERS, size=count)
            vectors = np.repeat(centroids[clusters], CHUNKS_PER_DOCUMENT, axis=0)
            vectors += 0.6 * rng.standard_normal(vectors.shape).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
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
            cursor.execute(definition)
        cursor.execute(f"VACUUM ANALYZE {Chunk._meta.db_table}")
        cursor.execute(f"VACUUM ANALYZE {Document._meta.db_table}")
    print(f"indexes rebuilt in {time.perf_counter() - started:.0f} s", flush=True)
    return channel


def _drop_chunk_indexes(cursor) -> list[str]:
    """Drop the GIN and HNSW indexes (rebuilt once after loading, which is far
    faster than maintaining them row by row); their definitions."""
    cursor.execute(
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s "
        "AND indexname IN ('chunk_search_vector_gin', 'chunk_embedding_hnsw')",
        [Chunk._meta.db_table],
    )
    found = cursor.fetchall()
    for name, _ in found:
        cursor.execute(f'DROP INDEX "{name}"')
    return [definition for _, definition in found]


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


def sample_queries(channel, rng, count: int, category_value: str | None):
    documents = Document.objects.for_channel(channel)
    if category_value:
        documents = documents.filter(metadata__category=category_value)
    ids = list(documents.values_list("id", flat=True))
    # The synthetic head words are in most chunks, like the stop words the english
    # configuration drops from real text: queries don't use them.
    total = Chunk.objects.for_channel(channel).count()
    stop_lexemes = set(
        TermStatistic.objects.filter(
            channel=channel, chunk_frequency__gt=STOP_WORD_SHARE * total
        ).values_list("lexeme", flat=True)
    )
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
        vector = np.asarray(embedding, dtype=np.float32)
        vector = vector + 0.3 * rng.standard_normal(DIMENSIONS).astype(np.float32)
        vector /= np.linalg.norm(vector)
        queries[" ".join(picked)] = vector.tolist()
    return queries


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def measure(channel, queries, metadata_filter, label: str, check: int) -> None:
    real = embeddings.get_embedder()
    real.embed_query("warm up")
    original = embeddings.get_embedder
    fixed = FixedEmbedder(real.model_name, queries)
    for mode in ("keyword", "vector", "hybrid"):
        channel.retriever_mode = mode
        without, with_embedding, short = [], [], 0
        for query in queries:
            embeddings.get_embedder = lambda: fixed
            try:
                # Untimed first call: both timed runs then see the same warm cache.
                retrieve_chunks(channel, query, metadata_filter=metadata_filter)
                started = time.perf_counter()
                retrieve_chunks(channel, query, metadata_filter=metadata_filter)
                without.append(time.perf_counter() - started)
                if metadata_filter and mode != "keyword":
                    found = retrieve_chunks(
                        channel, query, metadata_filter=metadata_filter, limit=check
                    )
                    short += len(found) < check
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
        if metadata_filter and mode != "keyword":
            line += f"; {len(queries) - short}/{len(queries)} returned {check} results"
        print(line, flush=True)
    channel.retriever_mode = "hybrid"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    call_command("migrate", verbosity=0, interactive=False)
    rng = np.random.default_rng(SEED)
    channel = grow(args.chunks, rng)
    total = Chunk.objects.count()
    mine = Chunk.objects.for_channel(channel).count()
    print(f"chunk table: {total} rows ({mine} in the synthetic channel)", flush=True)
    check = 50
    runs = [
        ("no filter", None, None),
        ("selective filter (0.5% of documents)", {"category": RARE}, RARE),
        ("filter (5% of documents)", {"category": COMMON}, COMMON),
    ]
    for label, metadata_filter, value in runs:
        queries = sample_queries(channel, rng, args.queries, value)
        measure(channel, queries, metadata_filter, label, check)


if __name__ == "__main__":
    main()
