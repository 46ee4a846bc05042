"""What storing vectors as halfvec (16-bit floats) costs in quality, on SciFact.

    .venv/bin/python benchmarks/halfvec.py --data ../shared/data/scifact

Embeds each abstract (title and text, as benchmarks/scifact.py indexes them)
with Quire's configured embedder, once (cached in DATA_DIR/halfvec-<model>.npy),
into a scratch table of the benchmark database (QUIRE_DATABASE_NAME, default
quire_bench) with the HNSW index Quire builds (cosine, m 16, ef_construction 64)
and the same index on the expression `embedding::halfvec(N)`. Then ranks the
judged test queries four ways, exact and HNSW (ef_search 100, as Quire's vector
leg sets it) over the full vectors and over their halfvec casts, and prints
nDCG@10 and Recall@100 per way, the overlap of each halfvec top 100 with its
full-precision twin, each walk's recall against its exact ranking, and the sizes
of both indexes and both column forms. The scratch table is dropped at the end.

Only the vector leg is compared: the keyword leg does not change with halfvec.
Quire's ingestion is bypassed (one vector per abstract) because what is
measured is the precision of the stored vectors, not the pipeline.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("QUIRE_DATABASE_NAME", "quire_bench")

import numpy as np  # noqa: E402
import scifact  # noqa: E402  (sets up Django with the benchmark's settings)
from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from documents.ingestion import embeddings  # noqa: E402

TABLE = "bench_halfvec_scifact"
CANDIDATES = 100
EF_SEARCH = 100


def corpus_vectors(corpus: list[dict], embedder) -> np.ndarray:
    """One unit vector per abstract, computed once per model."""
    name = embedder.model_name.replace("/", "-")
    cache = Path(settings.DATA_DIR) / f"halfvec-{name}-{len(corpus)}.npy"
    if cache.exists():
        return np.load(cache)
    started = time.perf_counter()
    texts = [scifact.document_text(item) for item in corpus]
    vectors = np.asarray(embedder.embed_documents(texts), dtype=np.float32)
    print(
        f"embedded {len(texts)} abstracts in {time.perf_counter() - started:.0f} s",
        file=sys.stderr,
    )
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.save(cache, vectors)
    return vectors


def load_table(corpus: list[dict], vectors: np.ndarray, dimensions: int) -> None:
    from pgvector.psycopg import register_vector

    connection.ensure_connection()
    register_vector(connection.connection)
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {TABLE}")
        cursor.execute(
            f"CREATE TABLE {TABLE} (id serial PRIMARY KEY, doc text NOT NULL, "
            f"embedding vector({dimensions}) NOT NULL)"
        )
        with cursor.cursor.copy(
            f"COPY {TABLE} (doc, embedding) FROM STDIN WITH (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["text", "vector"])
            for item, vector in zip(corpus, vectors, strict=True):
                copy.write_row((str(item["_id"]), vector))
        cursor.execute("SET maintenance_work_mem = '512MB'")
        cursor.execute(
            f"CREATE INDEX {TABLE}_vector ON {TABLE} USING hnsw "
            "(embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
        )
        cursor.execute(
            f"CREATE INDEX {TABLE}_halfvec ON {TABLE} USING hnsw "
            f"((embedding::halfvec({dimensions})) halfvec_cosine_ops) "
            "WITH (m = 16, ef_construction = 64)"
        )
        cursor.execute(f"ANALYZE {TABLE}")


def ranked(vector: list[float], dimensions: int, *, half: bool, exact: bool):
    """The CANDIDATES nearest abstracts by cosine distance."""
    literal = "[" + ",".join(f"{value:.9g}" for value in vector) + "]"
    if half:
        distance = (
            f"embedding::halfvec({dimensions}) <=> %s::vector::halfvec({dimensions})"
        )
    else:
        distance = "embedding <=> %s::vector"
    # "+ 0" hides the distance from the index: PostgreSQL sorts every row.
    order = f"({distance}) + 0" if exact else distance
    with connection.cursor() as cursor:
        cursor.execute(
            # One message, as the vector leg sends it: SET LOCAL lasts for the
            # implicit transaction the two statements share.
            f"SET LOCAL hnsw.ef_search = {EF_SEARCH}; "
            f"SELECT doc FROM {TABLE} ORDER BY {order} LIMIT %s",
            [literal, CANDIDATES],
        )
        cursor.nextset()
        return [row[0] for row in cursor.fetchall()]


def plan_of(vector: list[float], dimensions: int) -> str:
    """Which index the halfvec ORDER BY walks (it must be the expression's)."""
    literal = "[" + ",".join(f"{value:.9g}" for value in vector) + "]"
    with connection.cursor() as cursor:
        cursor.execute(
            f"EXPLAIN SELECT doc FROM {TABLE} ORDER BY embedding::halfvec("
            f"{dimensions}) <=> %s::vector::halfvec({dimensions}) LIMIT 100",
            [literal],
        )
        return " / ".join(row[0].strip() for row in cursor.fetchall()[:2])


def print_sizes(dimensions: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT pg_relation_size('{TABLE}_vector'), "
            f"pg_relation_size('{TABLE}_halfvec'), avg(pg_column_size(embedding)), "
            f"avg(pg_column_size(embedding::halfvec({dimensions}))), count(*) "
            f"FROM {TABLE}"
        )
        full_index, half_index, full_column, half_column, rows = cursor.fetchone()
    print(
        f"sizes over {rows} vectors: HNSW index {full_index / rows:.0f} B/vector "
        f"(vector) vs {half_index / rows:.0f} B/vector (halfvec); column "
        f"{float(full_column):.0f} B vs {float(half_column):.0f} B per vector"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data", type=Path, default=ROOT.parent / "shared" / "data" / "scifact"
    )
    args = parser.parse_args()
    call_command("migrate", verbosity=0, interactive=False)
    corpus, queries, qrels = scifact.load_beir(args.data)
    embedder = embeddings.get_embedder()
    dimensions = embedder.dimensions
    vectors = corpus_vectors(corpus, embedder)
    load_table(corpus, vectors, dimensions)
    judged = [qid for qid in qrels if qid in queries]
    query_vectors = {qid: embedder.embed_query(queries[qid]) for qid in judged}
    print("halfvec ORDER BY plan:", plan_of(query_vectors[judged[0]], dimensions))
    ways = {
        "exact vector": dict(half=False, exact=True),
        "exact halfvec": dict(half=True, exact=True),
        "HNSW vector": dict(half=False, exact=False),
        "HNSW halfvec": dict(half=True, exact=False),
    }
    ndcg = {way: [] for way in ways}
    recall = {way: [] for way in ways}
    shared = {"exact": [], "HNSW": []}
    walk_recall = {"vector": [], "halfvec": []}
    for qid in judged:
        rankings = {
            way: ranked(query_vectors[qid], dimensions, **options)
            for way, options in ways.items()
        }
        for way, documents in rankings.items():
            ndcg[way].append(scifact.ndcg_at(documents, qrels[qid], 10))
            recall[way].append(scifact.recall_at(documents, qrels[qid], 100))
        for kind, values in shared.items():
            full, half = rankings[f"{kind} vector"], rankings[f"{kind} halfvec"]
            values.append(len(set(full) & set(half)) / max(1, len(full)))
        for form, values in walk_recall.items():
            exact, walk = rankings[f"exact {form}"], rankings[f"HNSW {form}"]
            values.append(len(set(exact) & set(walk)) / max(1, len(exact)))
    print(f"SciFact test, {len(judged)} judged queries, {embedder.model_name}")
    for way in ways:
        print(
            f"{way:14} nDCG@10 {statistics.mean(ndcg[way]):.4f} "
            f"Recall@100 {statistics.mean(recall[way]):.4f}"
        )
    for kind, values in shared.items():
        print(
            f"{kind}: halfvec top {CANDIDATES} shared with the full vectors' "
            f"mean {statistics.mean(values):.4f} min {min(values):.2f}"
        )
    for form, values in walk_recall.items():
        print(
            f"HNSW {form} (ef_search {EF_SEARCH}) recall@{CANDIDATES} against exact "
            f"{form}: mean {statistics.mean(values):.4f} min {min(values):.2f}"
        )
    print_sizes(dimensions)
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {TABLE}")


if __name__ == "__main__":
    main()
