"""Load: 64 concurrent MCP clients (locust, headless) against uvicorn with several
workers on 127.0.0.1, while the ingestion worker ingests PDFs.

    .venv/bin/python benchmarks/load.py [--users 64] [--duration 120] [--workers 4]
    make bench-load

Runs in its own stack (.data/bench-load: embedded PostgreSQL, media). The
channel holds --abstracts SciFact abstracts (real MiniLM embeddings) and a few
text PDFs with page images; it is built once and reused. Every user has its own
API key (the per-key rate limit stays on, at a ceiling the run can't reach) and
calls tools/list, retrieve_text_chunks, rag_search and get_pages (weights
1:4:2:2) with --think seconds of think time on average, after a warm-up that
loads the embedding model in every uvicorn worker. During the run a feeder
uploads a PDF every --feed-every seconds and `manage.py ingest_worker` ingests
it. Prints requests/s, p50/p95/p99/max per call and overall, and the errors;
exits 1 if there was an error or a call slower than --max-ms.
"""

import argparse
import csv
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import stack  # noqa: E402

SLUG = "load"
SCIFACT = stack.SHARED_DATA / "scifact"
PDFS = stack.SHARED_DATA / "pdfs" / "text"
PAGE_PDFS = [
    "docling__redp5110_sampled.pdf",
    "papermage__2020.acl-main.447.pdf",
    "unstructured__multi-column.pdf",
]
FEED_PDFS = [
    "pdfplumber__federal-register-2020-17221.pdf",
    "papermage__value-error-box-diff-page.pdf",
    "pdfplumber__WARN-Report-for-7-1-2015-to-03-25-2016.pdf",
    "unstructured__multi-column.pdf",
]


def build_channel(abstracts: int):
    """The load channel: SciFact abstracts plus PDFs with page images (reused)."""
    from django.core.files import File

    from documents.access import COMMAND_LINE
    from documents.models import Channel, Document
    from documents.services.channels import create_channel
    from documents.services.documents import create_document
    from documents.services.ingestion import ingest_document
    from documents.tests.corpus import add_documents

    channel = Channel.objects.filter(slug=SLUG).first()
    if channel is not None and channel.documents.count() >= abstracts:
        return channel
    Channel.objects.filter(slug=SLUG).delete()
    channel = create_channel(
        slug=SLUG,
        name="Load",
        fields=[{"name": "source", "type": "string", "filterable": True}],
    )
    items = []
    with (SCIFACT / "corpus.jsonl").open() as handle:
        for line in handle:
            row = json.loads(line)
            items.append(
                {
                    "title": row["title"][:400] or row["_id"],
                    "filename": f"{row['_id']}.txt",
                    "text": row["text"],
                    "metadata": {"source": "scifact"},
                }
            )
            if len(items) == abstracts:
                break
    started = time.monotonic()
    add_documents(
        channel, items, progress=lambda n: print(f"  {n} abstracts", end="\r")
    )
    print(f"Loaded {len(items)} abstracts in {time.monotonic() - started:.0f} s")
    for name in PAGE_PDFS:
        with (PDFS / name).open("rb") as handle:
            document = create_document(
                actor=COMMAND_LINE,
                channel=channel,
                file=File(handle),
                filename=name,
                metadata={"source": "pdf"},
                enqueue=False,
            )
        document = ingest_document(document_id=document.pk)
        assert document.status == Document.Status.READY, document.status_reason
    return channel


def feed(channel, every: float, stop: threading.Event, queued: list[int]):
    """Upload a PDF every `every` seconds for the worker to ingest."""
    from django.core.files import File
    from django.db import connection

    from documents.access import COMMAND_LINE
    from documents.services.documents import (
        DuplicateDocument,
        create_document,
        reingest_document,
    )

    turn = 0
    try:
        while not stop.wait(every if turn else 1.0):
            name = FEED_PDFS[turn % len(FEED_PDFS)]
            turn += 1
            with (PDFS / name).open("rb") as handle:
                try:
                    document = create_document(
                        actor=COMMAND_LINE,
                        channel=channel,
                        file=File(handle),
                        filename=f"feed-{turn}-{name}",
                        metadata={"source": "feed"},
                    )
                except DuplicateDocument as duplicate:
                    # The same file again: ingest the copy already there anew.
                    document = duplicate.existing
                    reingest_document(document=document, actor=COMMAND_LINE)
            queued.append(document.pk)
    finally:
        connection.close()


def warm_up(url: str, keys: list[str], queries: list[str], workers: int) -> None:
    """Load the embedding model in every uvicorn worker before measuring."""
    calls = [
        threading.Thread(
            target=stack.mcp_call,
            args=(url, keys[n % len(keys)], "tools/call"),
            kwargs={
                "params": {
                    "name": "rag_search",
                    "arguments": {"query": queries[n % len(queries)]},
                },
                "timeout": 120,
            },
        )
        for n in range(workers * 6)
    ]
    for call in calls:
        call.start()
    for call in calls:
        call.join()


def report(prefix: Path, max_ms: float) -> int:
    rows = list(csv.DictReader((prefix.parent / f"{prefix.name}_stats.csv").open()))
    print()
    header = f"{'call':<22}{'requests':>9}{'errors':>8}{'req/s':>8}"
    header += f"{'p50 ms':>8}{'p95 ms':>8}{'p99 ms':>8}{'max ms':>8}"
    print(header)
    worst = 0.0
    errors = 0
    for row in rows:
        name = row["Name"] if row["Name"] != "Aggregated" else "all"
        print(
            f"{name:<22}{row['Request Count']:>9}{row['Failure Count']:>8}"
            f"{float(row['Requests/s']):>8.1f}{row['50%']:>8}{row['95%']:>8}"
            f"{row['99%']:>8}{float(row['Max Response Time']):>8.0f}"
        )
        if row["Name"] == "Aggregated":
            worst = float(row["Max Response Time"])
            errors = int(row["Failure Count"])
    failures = prefix.parent / f"{prefix.name}_failures.csv"
    if errors and failures.exists():
        print("\nErrors:")
        for row in csv.DictReader(failures.open()):
            print(f"  {row['Occurrences']} x {row['Name']}: {row['Error'][:160]}")
    ok = errors == 0 and worst <= max_ms
    verdict = "met" if ok else "MISSED"
    print(
        f"\nTarget (0 errors, no call slower than {max_ms:.0f} ms): {verdict} "
        f"({errors} errors, slowest {worst:.0f} ms)"
    )
    return 0 if ok else 1


def main() -> int:

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=64)
    parser.add_argument("--duration", type=int, default=120, help="seconds")
    parser.add_argument("--workers", type=int, default=4, help="uvicorn workers")
    parser.add_argument("--think", type=float, default=1.0, help="mean seconds")
    parser.add_argument("--abstracts", type=int, default=1000)
    parser.add_argument("--feed-every", type=float, default=20.0)
    parser.add_argument("--max-ms", type=float, default=2000.0)
    args = parser.parse_args()
    env = stack.boot("load", MCP_RATE_LIMIT_PER_MINUTE="1000000")
    from django.db import connections

    from documents.access import COMMAND_LINE
    from documents.models import ApiKey, Document
    from documents.services.keys import create_api_key

    channel = build_channel(args.abstracts)
    ApiKey.objects.filter(name__startswith="load-").delete()
    keys = [
        create_api_key(actor=COMMAND_LINE, name=f"load-{n}", channels=[channel]).raw_key
        for n in range(args.users)
    ]
    with (SCIFACT / "queries.jsonl").open() as handle:
        queries = [json.loads(line)["text"] for line in handle]
    pdfs = Document.objects.for_channel(channel).ready().filter(page_count__gt=1)
    config = {
        "path": f"/mcp/{SLUG}",
        "keys": keys,
        "queries": queries,
        "documents": [[d.pk, d.page_count] for d in pdfs],
    }
    out = Path(env["QUIRE_DATA_DIR"])
    (out / "load-config.json").write_text(json.dumps(config))
    env["QUIRE_LOAD_CONFIG"] = str(out / "load-config.json")
    env["QUIRE_LOAD_THINK"] = str(args.think)
    connections.close_all()

    # One ONNX thread per process: the uvicorn workers and the ingestion worker
    # are the parallelism, and oversubscribed cores only add latency.
    env["EMBEDDING_THREADS"] = "1"
    port = stack.free_port()
    web = stack.start_web(env, workers=args.workers, port=port)
    warm_up(f"http://127.0.0.1:{port}{config['path']}", keys, queries, args.workers)
    worker = stack.start_worker(env)
    stop, queued = threading.Event(), []
    feeder = threading.Thread(
        target=feed, args=(channel, args.feed_every, stop, queued)
    )
    feeder.start()
    prefix = out / "locust"
    print(
        f"{args.users} MCP clients for {args.duration} s against uvicorn "
        f"({args.workers} workers) on 127.0.0.1:{port}, think time ~{args.think} s, "
        f"a PDF uploaded every {args.feed_every:g} s for the ingestion worker"
    )
    try:
        subprocess.run(
            [
                str(Path(sys.executable).with_name("locust")),
                "-f",
                str(Path(__file__).with_name("load_locustfile.py")),
                "--headless",
                "--users",
                str(args.users),
                "--spawn-rate",
                str(args.users),
                "--run-time",
                f"{args.duration}s",
                "--host",
                f"http://127.0.0.1:{port}",
                "--csv",
                str(prefix),
                "--only-summary",
                "--loglevel",
                "WARNING",
                "--stop-timeout",
                "10",
            ],
            env=env,
            check=False,
            stdout=subprocess.DEVNULL,
            stderr=(out / "locust.log").open("w"),
        )
    finally:
        stop.set()
        feeder.join()
        stack.stop(worker)
        stack.stop(web)
    ingested = Document.objects.filter(pk__in=queued)
    states = {
        status: ingested.filter(status=status).count()
        for status in ("ready", "processing", "pending", "failed")
    }
    print(f"PDFs uploaded during the run: {len(queued)}; at the end: {states}")
    return report(prefix, args.max_ms)


if __name__ == "__main__":
    sys.exit(main())
