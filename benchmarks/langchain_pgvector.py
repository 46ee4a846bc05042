"""SciFact retrieval: Quire beside LangChain's PGVectorStore (langchain-postgres).

    .venv/bin/python benchmarks/langchain_pgvector.py --data ../shared/data/scifact

The LangChain store indexes the same SciFact chunks as Quire's benchmark channel
(same texts, same MiniLM vectors; its queries are embedded by the same model,
wrapped as a LangChain `Embeddings`) in a table of its own in the same
PostgreSQL database, with an HNSW
index and, for its hybrid mode, a tsvector column with a GIN index. Its hybrid
search gets the same candidates per leg and the same reciprocal rank fusion
constant as Quire's channel. The judged queries run through Quire, then LangChain
hybrid, then LangChain vector-only, each search timed with the query's
embedding included. Prints nDCG@10, Recall@100 and
p50/p95 latency per system.

Reuses benchmarks/scifact.py for the corpus, the channel, and the metrics.
"""

import argparse
import dataclasses
import functools
import statistics
import sys
import time
import uuid
from pathlib import Path

import scifact  # sets up Django on the benchmark database
from django.core.management import call_command
from django.db import connection
from langchain_core.embeddings import Embeddings

from documents.ingestion import embeddings
from documents.models import Channel, Chunk
from documents.search.service import retrieve_chunks

TABLE_PREFIX = "langchain_scifact"
BATCH = 500


class PeerEmbeddings(Embeddings):
    """The same MiniLM model as Quire's, as a LangChain Embeddings, with ONNX
    Runtime's default spinning threads: the fastest for one query at a time,
    which is how the store embeds (Quire turns spinning off so that its keyword
    query can run in PostgreSQL while the query is embedded)."""

    @functools.cached_property
    def _model(self) -> embeddings.OnnxMiniLMEmbedder:
        return embeddings.OnnxMiniLMEmbedder(spin=True)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._model.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        # Straight to the model, without Quire's queue for concurrent queries.
        return self._model.embed_documents([text])[0]


def database_url() -> str:
    """SQLAlchemy URL (psycopg 3, async) of Django's database."""
    from sqlalchemy.engine import URL

    params = connection.get_connection_params()
    return URL.create(
        "postgresql+psycopg",
        username=params.get("user"),
        password=params.get("password"),
        database=params.get("dbname"),
        query={"host": str(params.get("host") or ""), "port": str(params["port"])}
        if params.get("host", "").startswith("/")
        else {},
        host=None if params.get("host", "").startswith("/") else params.get("host"),
        port=None if params.get("host", "").startswith("/") else params.get("port"),
    ).render_as_string(hide_password=False)


def table_name(channel: Channel) -> str:
    """LangChain's table of the channel's chunks."""
    return f"{TABLE_PREFIX}_{channel.slug.replace('-', '_')}"


def langchain_store(channel: Channel):
    """The PGVectorStore holding the channel's chunks (built on first use)."""
    from langchain_postgres import PGEngine, PGVectorStore
    from langchain_postgres.v2.hybrid_search_config import HybridSearchConfig
    from langchain_postgres.v2.indexes import HNSWIndex

    connection.ensure_connection()
    engine = PGEngine.from_connection_string(url=database_url())
    table = table_name(channel)
    hybrid = HybridSearchConfig(tsv_column="content_tsv")
    chunks = Chunk.objects.for_channel(channel).order_by("id")
    expected = chunks.count()
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [table])
        exists = cursor.fetchone()[0]
        count = 0
        if exists:
            cursor.execute(f'SELECT count(*) FROM "{table}"')
            count = cursor.fetchone()[0]
    if exists and count != expected:
        engine.drop_table(table)
        exists = False
    if not exists:
        engine.init_vectorstore_table(
            table_name=table, vector_size=384, hybrid_search_config=hybrid
        )
    store = PGVectorStore.create_sync(
        engine,
        embedding_service=PeerEmbeddings(),
        table_name=table,
        hybrid_search_config=hybrid,
    )
    if not exists:
        started = time.perf_counter()
        rows = chunks.values_list(
            "id", "text", "embedding", "document__original_filename"
        )
        for start in range(0, expected, BATCH):
            batch = list(rows[start : start + BATCH])
            store.add_embeddings(
                texts=[text for _, text, _, _ in batch],
                embeddings=[[float(x) for x in vector] for _, _, vector, _ in batch],
                metadatas=[
                    {"doc": filename.rsplit(".", 1)[0]} for _, _, _, filename in batch
                ],
                ids=[str(uuid.uuid5(uuid.NAMESPACE_OID, str(pk))) for pk, *_ in batch],
            )
        store.apply_vector_index(HNSWIndex())
        store.apply_hybrid_search_index()
        print(
            f"indexed {expected} chunks into {table} in "
            f"{time.perf_counter() - started:.0f} s",
            file=sys.stderr,
        )
    return store, hybrid


def ranked_documents(docs: list[str]) -> list[str]:
    ranked: list[str] = []
    for doc in docs:
        if doc not in ranked:
            ranked.append(doc)
    return ranked


def run(channel: Channel, store, hybrid, queries: dict, qrels: dict) -> None:
    from langchain_postgres.v2.hybrid_search_config import reciprocal_rank_fusion

    ids = scifact.corpus_ids(channel)
    judged = [qid for qid in qrels if qid in queries]
    candidates = channel.retriever_candidates
    top_k = channel.retriever_top_k

    def langchain_hybrid(query: str, k: int) -> list[str]:
        # A fresh config per query: the store writes the query into the config
        # it is given, and a shared one would keep the first query's keywords.
        config = dataclasses.replace(
            hybrid,
            fusion_function=reciprocal_rank_fusion,
            fusion_function_parameters={"rrf_k": channel.retriever_rrf_k},
            primary_top_k=max(candidates, k),
            secondary_top_k=max(candidates, k),
            fts_query="",
        )
        found = store.similarity_search(query, k=k, hybrid_search_config=config)
        return [doc.metadata["doc"] for doc in found]

    def langchain_vector(query: str, k: int) -> list[str]:
        found = store.similarity_search(query, k=k, hybrid_search_config=None)
        return [doc.metadata["doc"] for doc in found]

    def quire(query: str, k: int) -> list[str]:
        return [ids[c.document_id] for c in retrieve_chunks(channel, query, limit=k)]

    systems = {
        f"Quire ({channel.retriever_mode})": quire,
        "LangChain PGVector hybrid": langchain_hybrid,
        "LangChain PGVector vector": langchain_vector,
    }
    scores = {name: ([], [], []) for name in systems}
    # One system at a time: each embedder's threads (ONNX Runtime's spinning
    # ones on the LangChain side) would otherwise spill into the next system's
    # timing. Every system gets a warm-up and the same queries in the same order.
    for name, search in systems.items():
        ndcgs, recalls, latencies = scores[name]
        for _ in range(5):
            search("warm up", top_k)
        for qid in judged:
            query = queries[qid]
            started = time.perf_counter()
            search(query, top_k)
            latencies.append(time.perf_counter() - started)
        for qid in judged:
            ranked = ranked_documents(search(queries[qid], 100))
            ndcgs.append(scifact.ndcg_at(ranked, qrels[qid], 10))
            recalls.append(scifact.recall_at(ranked, qrels[qid], 100))
    print(
        f"SciFact retrieval: Quire vs LangChain PGVectorStore "
        f"(langchain-postgres {_version('langchain-postgres')}); {len(judged)} "
        f"judged queries, {candidates} candidates per leg, RRF k "
        f"{channel.retriever_rrf_k}, latency of a top-{top_k} search with the "
        "query embedding"
    )
    print(f"{'system':<28} {'nDCG@10':>8} {'R@100':>7} {'p50 ms':>8} {'p95 ms':>8}")
    for name, (ndcgs, recalls, latencies) in scores.items():
        print(
            f"{name:<28} {statistics.mean(ndcgs):>8.3f} "
            f"{statistics.mean(recalls):>7.3f} "
            f"{scifact.percentile(latencies, 0.5) * 1000:>8.1f} "
            f"{scifact.percentile(latencies, 0.95) * 1000:>8.1f}"
        )
    ours_ndcg, _, ours_latency = next(iter(scores.values()))
    for name, (ndcgs, _, latencies) in list(scores.items())[1:]:
        ndcg = statistics.mean(ours_ndcg) / statistics.mean(ndcgs)
        p50, p95 = (
            scifact.percentile(ours_latency, q) / scifact.percentile(latencies, q)
            for q in (0.5, 0.95)
        )
        print(
            f"Quire / {name}: nDCG@10 {ndcg:.2f}x, latency p50 {p50:.2f}x, "
            f"p95 {p95:.2f}x"
        )


def _version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data",
        type=Path,
        default=scifact.ROOT.parent / "shared" / "data" / "scifact",
        help="BEIR-layout folder (corpus.jsonl, queries.jsonl, qrels/test.tsv)",
    )
    args = parser.parse_args()
    call_command("migrate", verbosity=0, interactive=False)
    corpus, queries, qrels = scifact.load_beir(args.data)
    channel = scifact.prepare_channel(corpus)
    store, hybrid = langchain_store(channel)
    run(channel, store, hybrid, queries, qrels)


if __name__ == "__main__":
    main()
