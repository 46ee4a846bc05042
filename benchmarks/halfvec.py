"""What storing vectors as halfvec (16-bit floats) costs in quality, on SciFact.

    .venv/bin/python benchmarks/halfvec.py --data ../shared/data/scifact

Reuses (or ingests) benchmarks/scifact.py's channel in its database, builds an
HNSW expression index on `embedding::halfvec(N)` beside Quire's
chunk_embedding_hnsw (same m and ef_construction), and ranks the judged test
queries four ways: exact and HNSW (ef_search 100, as the vector leg sets it)
over the full vectors and over their halfvec casts. Prints nDCG@10 and
Recall@100 per way for the vector leg alone and fused with Quire's keyword leg
(hybrid, the channel's RRF k), the overlap of each halfvec top 100 with its
full-precision twin, and the sizes of both indexes and both column forms.

The expression index is the operator's option (docs/scaling.md): it is dropped
at the end unless --keep-index.
"""

import argparse
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("QUIRE_DATABASE_NAME", "quire_bench")

import scifact  # noqa: E402  (sets up Django with the benchmark's settings)
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from documents.ingestion import embeddings  # noqa: E402
from documents.models import Chunk, Document  # noqa: E402
from documents.search.fusion import reciprocal_rank_fusion  # noqa: E402
from documents.search.legs import Scope, keyword_leg  # noqa: E402

INDEX = "bench_chunk_embedding_halfvec_hnsw"
CANDIDATES = 100
EF_SEARCH = 100


def build_index(dimensions: int) -> None:
    table = Chunk._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '1GB'")
        cursor.execute(
            f"CREATE INDEX IF NOT EXISTS {INDEX} ON {table} USING hnsw "
            f"((embedding::halfvec({dimensions})) halfvec_cosine_ops) "
            "WITH (m = 16, ef_construction = 64)"
        )
        cursor.execute(f"ANALYZE {table}")


def ranked_chunks(
    channel_id: int, vector: list[float], dimensions: int, *, half: bool, exact: bool
) -> list[int]:
    """The CANDIDATES nearest chunks of the channel by cosine distance."""
    table = Chunk._meta.db_table
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
            f"SET LOCAL hnsw.ef_search = {EF_SEARCH}; "
            f"SELECT id FROM {table} WHERE channel_id = %s "
            f"AND embedding IS NOT NULL ORDER BY {order} LIMIT %s",
            [channel_id, literal, CANDIDATES],
        )
        cursor.nextset()
        return [row[0] for row in cursor.fetchall()]


def explain_uses(channel_id: int, vector: list[float], dimensions: int) -> str:
    literal = "[" + ",".join(f"{value:.9g}" for value in vector) + "]"
    with connection.cursor() as cursor:
        cursor.execute(
            f"EXPLAIN SELECT id FROM {Chunk._meta.db_table} WHERE channel_id = %s "
            f"ORDER BY embedding::halfvec({dimensions}) <=> "
            f"%s::vector::halfvec({dimensions}) LIMIT 100",
            [channel_id, literal],
        )
        plan = "\n".join(row[0] for row in cursor.fetchall())
    return INDEX if INDEX in plan else "no index (" + plan.splitlines()[0] + ")"


def documents_of(chunk_ids: list[int], document_of: dict[int, int]) -> list[int]:
    """Documents in the order of their best chunk."""
    seen: dict[int, None] = {}
    for chunk_id in chunk_ids:
        seen.setdefault(document_of[chunk_id], None)
    return list(seen)


def sizes(dimensions: int) -> None:
    table = Chunk._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_relation_size('chunk_embedding_hnsw'), "
            f"pg_relation_size('{INDEX}'), "
            "avg(pg_column_size(embedding)), "
            f"avg(pg_column_size(embedding::halfvec({dimensions}))), count(*) "
            f"FROM {table}"
        )
        full_index, half_index, full_column, half_column, rows = cursor.fetchone()
    print(
        f"sizes over {rows} chunks: HNSW index {full_index / rows:.0f} B/chunk "
        f"(vector) vs {half_index / rows:.0f} B/chunk (halfvec); column "
        f"{float(full_column):.0f} B vs {float(half_column):.0f} B per chunk"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data", type=Path, default=ROOT.parent / "shared" / "data" / "scifact"
    )
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--keep-index", action="store_true")
    args = parser.parse_args()
    call_command("migrate", verbosity=0, interactive=False)
    corpus, queries, qrels = scifact.load_beir(args.data)
    channel = scifact.prepare_channel(corpus, workers=args.workers)
    embedder = embeddings.get_embedder()
    dimensions = embedder.dimensions
    build_index(dimensions)
    ids = scifact.corpus_ids(channel)
    document_of = dict(
        Chunk.objects.filter(channel=channel).values_list("id", "document_id")
    )
    judged = [qid for qid in qrels if qid in queries]
    vectors = dict(
        zip(
            judged,
            (embedder.embed_query(queries[qid]) for qid in judged),
            strict=True,
        )
    )
    print(
        "halfvec order by uses:",
        explain_uses(channel.pk, vectors[judged[0]], dimensions),
    )
    ways = {
        "exact vector": dict(half=False, exact=True),
        "exact halfvec": dict(half=True, exact=True),
        "HNSW vector": dict(half=False, exact=False),
        "HNSW halfvec": dict(half=True, exact=False),
    }
    scores = {(way, leg): ([], []) for way in ways for leg in ("vector", "hybrid")}
    overlaps = {"exact": [], "HNSW": []}
    # The walk's own recall on real embeddings: HNSW top 100 shared with exact.
    walk_recall = {"vector": [], "halfvec": []}
    scope = Scope(channel, Document.objects.for_channel(channel).ready(), False)
    for qid in judged:
        keyword = [chunk_id for chunk_id, _ in keyword_leg(scope, queries[qid], 100)]
        rankings = {}
        for way, options in ways.items():
            chunks = ranked_chunks(channel.pk, vectors[qid], dimensions, **options)
            rankings[way] = chunks
            fused = [
                chunk_id
                for chunk_id, _ in reciprocal_rank_fusion(
                    [keyword, chunks], k=channel.retriever_rrf_k
                )
            ]
            for leg, ranked in (("vector", chunks), ("hybrid", fused)):
                documents = [ids[d] for d in documents_of(ranked, document_of)]
                ndcg, recall = scores[(way, leg)]
                ndcg.append(scifact.ndcg_at(documents, qrels[qid], 10))
                recall.append(scifact.recall_at(documents, qrels[qid], 100))
        for form in walk_recall:
            exact = set(rankings[f"exact {form}"])
            walk = rankings[f"HNSW {form}"]
            walk_recall[form].append(len(exact & set(walk)) / max(1, len(exact)))
        for kind in overlaps:
            full, half = rankings[f"{kind} vector"], rankings[f"{kind} halfvec"]
            overlaps[kind].append(len(set(full) & set(half)) / max(1, len(full)))
    print(f"SciFact test, {len(judged)} judged queries, {embedder.model_name}")
    for (way, leg), (ndcg, recall) in scores.items():
        print(
            f"{leg:6} {way:14} nDCG@10 {statistics.mean(ndcg):.4f} "
            f"Recall@100 {statistics.mean(recall):.4f}"
        )
    for kind, values in overlaps.items():
        print(
            f"{kind}: halfvec top {CANDIDATES} chunks shared with the full vectors' "
            f"mean {statistics.mean(values):.4f} min {min(values):.2f}"
        )
    for form, values in walk_recall.items():
        print(
            f"HNSW {form} (ef_search {EF_SEARCH}) recall@{CANDIDATES} against exact "
            f"{form}: mean {statistics.mean(values):.4f} min {min(values):.2f}"
        )
    sizes(dimensions)
    if not args.keep_index:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP INDEX IF EXISTS {INDEX}")


if __name__ == "__main__":
    main()
