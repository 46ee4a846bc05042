"""SciFact (BEIR layout) through Quire's own ingestion and retrieval.

    .venv/bin/python benchmarks/scifact.py --data ../shared/data/scifact

Ingests corpus.jsonl into a channel (one plain-text document per abstract, its
title as the title), runs the judged queries of qrels/test.tsv through
documents.search.service.retrieve_chunks in keyword, vector and hybrid mode and
prints nDCG@10 and Recall@100 per mode (documents ranked by their best chunk),
then query latency p50/p95 with and without embedding the query.

The benchmark uses its own database (QUIRE_DATABASE_NAME, default quire_bench)
and keeps the ingested channel there: a rerun on the same corpus reuses it.
"""

import argparse
import hashlib
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
os.environ.setdefault("QUIRE_DATABASE_NAME", "quire_bench")
# Recall@100 needs 100 documents from one call.
os.environ.setdefault("MCP_MAX_RESULTS", "1000")
os.environ.setdefault("TASKS_BACKEND", "django.tasks.backends.dummy.DummyBackend")

import django  # noqa: E402

django.setup()

from django.core.files.base import ContentFile  # noqa: E402
from django.core.management import call_command  # noqa: E402

from documents.access import COMMAND_LINE  # noqa: E402
from documents.ingestion import embeddings  # noqa: E402
from documents.models import Channel, Document  # noqa: E402
from documents.search.service import retrieve_chunks  # noqa: E402

MODES = ("keyword", "vector", "hybrid")
# Also shown: hybrid with the RRF paper's k, to show how much the default matters.
REFERENCE_RRF_K = 60


def load_beir(folder: Path) -> tuple[list[dict], dict[str, str], dict[str, dict]]:
    corpus = [json.loads(line) for line in (folder / "corpus.jsonl").open()]
    queries = {}
    for line in (folder / "queries.jsonl").open():
        item = json.loads(line)
        queries[str(item["_id"])] = item["text"]
    qrels: dict[str, dict[str, int]] = {}
    with (folder / "qrels" / "test.tsv").open() as handle:
        for line in handle:
            parts = line.strip().split("\t")
            if len(parts) < 3 or parts[0] == "query-id":
                continue
            qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    return corpus, queries, qrels


def ingestion_path() -> str:
    try:
        from documents.services.documents import create_document  # noqa: F401
        from documents.services.ingestion import ingest_document  # noqa: F401
    except ImportError:
        return "direct"
    return "services"


def document_text(item: dict) -> str:
    # BEIR's keyword baselines index title and abstract together.
    title = (item.get("title") or "").strip()
    return f"{title}\n\n{item['text']}" if title else item["text"]


def ingest_through_services(channel_id: int, items: list[dict], worker: int) -> None:
    """Upload and ingest documents one by one, as the admin or API would."""
    from documents.services.documents import create_document
    from documents.services.ingestion import ingest_document

    channel = Channel.objects.get(pk=channel_id)
    for index, item in enumerate(items, start=1):
        document = create_document(
            actor=COMMAND_LINE,
            channel=channel,
            file=ContentFile(document_text(item).encode("utf-8")),
            filename=f"{item['_id']}.txt",
            title=(item.get("title") or "").strip(),
            content_type="text/plain",
        )
        ingest_document(document_id=document.pk)
        if index % 250 == 0:
            print(
                f"  worker {worker}: ingested {index}/{len(items)}",
                file=sys.stderr,
                flush=True,
            )


def ingest(channel: Channel, corpus: list[dict], path: str, workers: int = 1) -> None:
    started = time.perf_counter()
    if path == "services" and workers > 1:
        import multiprocessing

        from django.db import connections

        connections.close_all()
        context = multiprocessing.get_context("spawn")
        processes = [
            context.Process(
                target=ingest_through_services,
                args=(channel.pk, corpus[worker::workers], worker),
            )
            for worker in range(workers)
        ]
        for process in processes:
            process.start()
        for process in processes:
            process.join()
        if any(process.exitcode for process in processes):
            raise SystemExit("an ingestion worker failed; rerun to resume")
    elif path == "services":
        ingest_through_services(channel.pk, corpus, 0)
    else:
        from documents.tests.corpus import add_documents

        add_documents(
            channel,
            [
                {
                    "title": (item.get("title") or "").strip(),
                    "filename": f"{item['_id']}.txt",
                    "text": document_text(item),
                }
                for item in corpus
            ],
            progress=lambda done: print(
                f"  ingested {done}/{len(corpus)}", file=sys.stderr
            ),
        )
    print(
        f"ingested {len(corpus)} documents in {time.perf_counter() - started:.0f} s "
        f"({path})",
        file=sys.stderr,
    )


def prepare_channel(
    corpus: list[dict], *, reweight: bool = False, workers: int = 1
) -> Channel:
    """The benchmark channel for this corpus, ingesting whatever is missing (a
    run that was stopped resumes where it stopped)."""
    from documents.services.channels import create_channel

    path = ingestion_path()
    digest = hashlib.sha256()
    for item in corpus:
        digest.update(json.dumps(item, sort_keys=True).encode())
    digest.update(path.encode())
    digest.update(embeddings.get_embedder().model_name.encode())
    # Chunks made before chunks carried their title and headings are not reused.
    digest.update(b"chunk context")
    slug = f"scifact-{digest.hexdigest()[:12]}"
    channel = Channel.objects.filter(slug=slug).first()
    if channel is None:
        channel = create_channel(slug=slug, name="SciFact benchmark")
    documents = Document.objects.for_channel(channel)
    unfinished = documents.exclude(status=Document.Status.READY)
    if path == "services" and unfinished.exists():
        from documents.services.ingestion import ingest_document  # noqa: F401

        for pk in unfinished.values_list("id", flat=True):
            ingest_document(document_id=pk)
    present = set(documents.values_list("original_filename", flat=True))
    missing = [item for item in corpus if f"{item['_id']}.txt" not in present]
    if missing:
        print(
            f"channel {slug}: ingesting {len(missing)} of {len(corpus)} documents",
            file=sys.stderr,
        )
        ingest(channel, missing, path, workers)
    else:
        print(f"reusing channel {slug} ({len(corpus)} documents)", file=sys.stderr)
    if missing or reweight:
        # Chunks ingested early were weighted with the average length of a
        # smaller corpus; a bulk load ends by bringing them up to date.
        from documents.search.indexing import reweight_channel

        count = reweight_channel(channel)
        print(f"reweighted {count} chunks", file=sys.stderr)
    return channel


def corpus_ids(channel: Channel) -> dict[int, str]:
    return {
        pk: filename.rsplit(".", 1)[0]
        for pk, filename in Document.objects.for_channel(channel).values_list(
            "id", "original_filename"
        )
    }


def ndcg_at(ranked: list[str], relevant: dict[str, int], k: int) -> float:
    dcg = sum(
        relevant.get(doc, 0) / math.log2(position + 2)
        for position, doc in enumerate(ranked[:k])
    )
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(gain / math.log2(position + 2) for position, gain in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: list[str], relevant: dict[str, int], k: int) -> float:
    wanted = {doc for doc, gain in relevant.items() if gain > 0}
    return len(wanted & set(ranked[:k])) / len(wanted) if wanted else 0.0


class PrecomputedEmbedder:
    """The real embedder's query vectors, computed before timing."""

    def __init__(self, embedder, vectors: dict[str, list[float]]):
        self.model_name = embedder.model_name
        self.dimensions = embedder.dimensions
        self._vectors = vectors

    def embed_query(self, text: str) -> list[float]:
        return self._vectors[text]


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def run(channel: Channel, queries: dict[str, str], qrels: dict[str, dict]) -> None:
    # Measure the default retriever configuration, whatever the stored channel has.
    for name in ("retriever_candidates", "retriever_top_k", "retriever_rrf_k"):
        setattr(channel, name, Channel._meta.get_field(name).default)
    ids = corpus_ids(channel)
    judged = [qid for qid in qrels if qid in queries]
    real = embeddings.get_embedder()
    real.embed_query("warm up")
    vectors = {queries[qid]: real.embed_query(queries[qid]) for qid in judged}
    original = embeddings.get_embedder
    latencies: dict[str, dict[str, list[float]]] = {}
    for mode in MODES:
        channel.retriever_mode = mode
        ndcgs, recalls = [], []
        timings = {"with embedding": [], "without embedding": []}
        for qid in judged:
            query = queries[qid]
            started = time.perf_counter()
            retrieve_chunks(channel, query, limit=channel.retriever_top_k)
            timings["with embedding"].append(time.perf_counter() - started)
            embeddings.get_embedder = lambda: PrecomputedEmbedder(real, vectors)
            try:
                started = time.perf_counter()
                retrieve_chunks(channel, query, limit=channel.retriever_top_k)
                timings["without embedding"].append(time.perf_counter() - started)
                chunks = retrieve_chunks(channel, query, limit=200)
            finally:
                embeddings.get_embedder = original
            ranked: list[str] = []
            for chunk in chunks:
                doc = ids[chunk.document_id]
                if doc not in ranked:
                    ranked.append(doc)
            ndcgs.append(ndcg_at(ranked, qrels[qid], 10))
            recalls.append(recall_at(ranked, qrels[qid], 100))
        print(
            f"{mode} nDCG@10 {statistics.mean(ndcgs):.3f} "
            f"Recall@100 {statistics.mean(recalls):.3f}",
            flush=True,
        )
        latencies[mode] = timings
    default_k = channel.retriever_rrf_k
    channel.retriever_mode, channel.retriever_rrf_k = "hybrid", REFERENCE_RRF_K
    embeddings.get_embedder = lambda: PrecomputedEmbedder(real, vectors)
    try:
        ndcgs, recalls = [], []
        for qid in judged:
            chunks = retrieve_chunks(channel, queries[qid], limit=200)
            ranked = []
            for chunk in chunks:
                if ids[chunk.document_id] not in ranked:
                    ranked.append(ids[chunk.document_id])
            ndcgs.append(ndcg_at(ranked, qrels[qid], 10))
            recalls.append(recall_at(ranked, qrels[qid], 100))
    finally:
        embeddings.get_embedder = original
        channel.retriever_rrf_k = default_k
    print(
        f"(hybrid with rrf k {REFERENCE_RRF_K} instead of {default_k}: nDCG@10 "
        f"{statistics.mean(ndcgs):.3f} Recall@100 {statistics.mean(recalls):.3f})",
        flush=True,
    )
    for mode in MODES:
        for label, values in latencies[mode].items():
            print(
                f"{mode} latency {label}: p50 {percentile(values, 0.5) * 1000:.1f} ms "
                f"p95 {percentile(values, 0.95) * 1000:.1f} ms"
            )
    print(
        f"({len(judged)} judged queries; quality from limit 200, so 200 candidates "
        f"per leg; latency with the channel's limit {channel.retriever_top_k} and "
        f"{channel.retriever_candidates} candidates per leg; rrf k "
        f"{channel.retriever_rrf_k})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data",
        type=Path,
        default=ROOT.parent / "shared" / "data" / "scifact",
        help="BEIR-layout folder (corpus.jsonl, queries.jsonl, qrels/test.tsv)",
    )
    parser.add_argument(
        "--reweight",
        action="store_true",
        help="recompute the stored BM25 weights of a reused channel first",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help="ingestion processes (default: one per core)",
    )
    args = parser.parse_args()
    call_command("migrate", verbosity=0, interactive=False)
    corpus, queries, qrels = load_beir(args.data)
    channel = prepare_channel(corpus, reweight=args.reweight, workers=args.workers)
    run(channel, queries, qrels)


if __name__ == "__main__":
    main()
