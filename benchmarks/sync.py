"""Syncing sources: a 1,000-object S3 bucket (moto's S3 server, HTTP on
127.0.0.1) and a 1,000-file folder, synced into channels by Quire's sync engine.

    .venv/bin/python benchmarks/sync.py [--entries 1000] [--no-folder]
                                        [--no-ingest]

For each source it prints one line per figure:

- the first sync's entries/s (listing, download, create_document: what
  services.sync.run_sync does), then entries/s of that sync plus the ingestion
  of the documents it added (ingest_document, as the worker runs the tasks the
  sync queued);
- the bare ingestion rate of the same files (create_document + ingest_document,
  as an upload is), the floor a sync is compared with, and the ratio;
- a second sync where nothing changed: its wall time (issue 21 requires under
  10 s for 1,000 entries) and the requests the store answered, counted on the
  moto server from its request log: list pages, HEADs and object downloads
  (GETs of objects; there must be none).

The documents are short text files (a few sentences, one chunk each), so the
figures are about the sync's own cost rather than the reading of large files.
Runs in a throwaway database (created, migrated and dropped here) and a
temporary media folder, as benchmarks/ingest.py does. moto answers each
request slower than a real store, so the S3 figures are a ceiling on the
store's share.
"""

import argparse
import collections
import json
import logging
import os
import re
import socket
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BUCKET = "bench-sync"
PREFIX = "docs/"
KEY_ID = "QUIRE_BENCH_SYNC_KEY_ID"
SECRET = "QUIRE_BENCH_SYNC_SECRET"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# The store and the folder root are operator settings, read once when Django
# starts: they are declared here, before django.setup(), as an operator would.
PORT = free_port()
ENDPOINT = f"http://127.0.0.1:{PORT}"
FOLDERS = tempfile.TemporaryDirectory(prefix="quire-bench-folder-")
MEDIA = tempfile.TemporaryDirectory(prefix="quire-bench-media-")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
os.environ["QUIRE_TEST_DATABASE"] = f"quire_bench_sync_{os.getpid()}"
os.environ["MEDIA_ROOT"] = MEDIA.name
os.environ["STORAGE_BACKEND"] = "filesystem"
os.environ[KEY_ID] = "bench"
os.environ[SECRET] = "bench"
os.environ["SOURCE_FOLDERS"] = FOLDERS.name
os.environ["SOURCE_S3_STORES"] = json.dumps(
    {
        "bench": {
            "endpoint_url": ENDPOINT,
            "region": "us-east-1",
            "access_key_env": KEY_ID,
            "secret_key_env": SECRET,
        }
    }
)

import boto3  # noqa: E402
import django  # noqa: E402
from moto.server import ThreadedMotoServer  # noqa: E402

django.setup()

from django.core.files.base import ContentFile  # noqa: E402
from django.test.utils import setup_databases, teardown_databases  # noqa: E402

from documents.access import COMMAND_LINE  # noqa: E402
from documents.ingestion import embeddings  # noqa: E402
from documents.models import Document, Source, SourceSync  # noqa: E402
from documents.services.channels import create_channel  # noqa: E402
from documents.services.documents import create_document  # noqa: E402
from documents.services.ingestion import ingest_document  # noqa: E402
from documents.services.sources import request_sync, save_source  # noqa: E402
from documents.services.sync import run_sync, summary  # noqa: E402
from documents.sources.registry import config_for  # noqa: E402

WORDS = (
    "pump valve seal bearing impeller housing gasket flange motor coupling "
    "pressure flow rate maintenance inspection torque shaft alignment"
).split()


def text_of(n: int, salt: str) -> bytes:
    """A few distinct sentences: one chunk, unlike every other file."""
    words = [WORDS[(n * 7 + i * 3) % len(WORDS)] for i in range(24)]
    return (
        f"Note {salt}-{n}. The {words[0]} of unit {n} is checked every "
        f"{n % 30 + 1} days. {' '.join(words[1:12])}. {' '.join(words[12:])}.\n"
    ).encode()


class Requests(logging.Handler):
    """Counts the requests moto's server logs (werkzeug's request line), by
    kind: object GETs under the prefix are downloads."""

    LINE = re.compile(r"(GET|HEAD|PUT|POST|DELETE) (\S+) HTTP")

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.counts: collections.Counter = collections.Counter()

    def emit(self, record: logging.LogRecord) -> None:
        found = self.LINE.search(record.getMessage())
        if not found:
            return
        method, path = found.groups()
        if method == "GET" and "list-type=2" in path:
            self.counts["list"] += 1
        elif path.startswith(f"/{BUCKET}/{PREFIX}"):
            self.counts["download" if method == "GET" else method.lower()] += 1

    def take(self) -> collections.Counter:
        counts, self.counts = self.counts, collections.Counter()
        return counts


def line(label: str, value: str) -> None:
    print(f"{label:<58} {value}", flush=True)


def rate(count: int, seconds: float) -> str:
    return f"{count / seconds:8.1f} entries/s ({count} in {seconds:.1f} s)"


def sync_once(source: Source) -> tuple[SourceSync, float]:
    started = time.perf_counter()
    sync, _ = request_sync(
        source=source,
        actor=COMMAND_LINE,
        trigger=SourceSync.Trigger.COMMAND,
        enqueue=False,
    )
    sync = run_sync(sync.pk)
    return sync, time.perf_counter() - started


def ingest_added(source: Source) -> float:
    """Ingest what the sync added, as the worker runs the tasks it queued."""
    started = time.perf_counter()
    for pk in (
        Document.objects.filter(source=source)
        .order_by("pk")
        .values_list("pk", flat=True)
    ):
        ingest_document(document_id=pk)
    return time.perf_counter() - started


def bare_ingestion(label: str, files: list[tuple[str, bytes]]) -> float:
    """create_document + ingest_document for each file, as an upload is."""
    channel = create_channel(slug=f"bench-bare-{label}", name=f"Bare {label}")
    started = time.perf_counter()
    for name, data in files:
        document = create_document(
            actor=COMMAND_LINE,
            channel=channel,
            file=ContentFile(data, name=name),
            enqueue=False,
        )
        ingest_document(document_id=document.pk)
    return time.perf_counter() - started


def measure(
    label: str,
    kind: str,
    location: str,
    files: list[tuple[str, bytes]],
    ingest: bool,
    requests: Requests | None,
) -> None:
    count = len(files)
    channel = create_channel(slug=f"bench-sync-{kind}", name=f"Synced {label}")
    source = save_source(
        source=Source(
            channel=channel,
            name=kind,
            kind=kind,
            config=config_for(kind, location, store="bench"),
        ),
        actor=COMMAND_LINE,
    )
    if requests:
        requests.take()
    first, seconds = sync_once(source)
    assert first.added == count, summary(first)
    line(f"{label}: first sync (list, download, create_document)", rate(count, seconds))
    if requests:
        counts = requests.take()
        line(
            f"{label}: first sync, requests to the store",
            f"{counts['list']} list, {counts['head']} HEAD, "
            f"{counts['download']} downloads",
        )
    if ingest:
        ingesting = ingest_added(source)
        ready = Document.objects.filter(
            source=source, status=Document.Status.READY
        ).count()
        assert ready == count, (ready, count)
        line(
            f"{label}: first sync + ingestion of what it added",
            rate(count, seconds + ingesting),
        )
        bare = bare_ingestion(kind, files)
        line(f"{label}: bare ingestion (create_document + ingest)", rate(count, bare))
        line(
            f"{label}: sync + ingestion / bare ingestion",
            f"{bare / (seconds + ingesting):8.2f}x",
        )
    second, seconds = sync_once(source)
    assert second.unchanged == count, summary(second)
    line(
        f"{label}: unchanged second sync, wall time",
        f"{seconds:8.2f} s ({summary(second)}; issue 21: < 10 s)",
    )
    if requests:
        counts = requests.take()
        line(
            f"{label}: unchanged second sync, requests to the store",
            f"{counts['list']} list, {counts['head']} HEAD, "
            f"{counts['download']} downloads (must be 0)",
        )


def run(entries: int, folder: bool, ingest: bool) -> None:
    embedder = embeddings.get_embedder()
    embedder.embed_documents(["warm-up: load the model before timing"])
    print(
        f"{entries} text files per source; embedder {embedder.model_name}; "
        f"{os.cpu_count()} cores"
    )
    requests = Requests()
    werkzeug = logging.getLogger("werkzeug")
    werkzeug.setLevel(logging.INFO)
    werkzeug.propagate = False
    werkzeug.addHandler(requests)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=PORT, verbose=False)
    server.start()
    try:
        client = boto3.client(
            "s3",
            endpoint_url=ENDPOINT,
            region_name="us-east-1",
            aws_access_key_id="bench",
            aws_secret_access_key="bench",
        )
        client.create_bucket(Bucket=BUCKET)
        files = [(f"{n:05}.txt", text_of(n, "s3")) for n in range(entries)]
        with ThreadPoolExecutor(8) as pool:
            list(
                pool.map(
                    lambda item: client.put_object(
                        Bucket=BUCKET,
                        Key=PREFIX + item[0],
                        Body=item[1],
                        ContentType="text/plain",
                    ),
                    files,
                )
            )
        measure("S3 (moto, HTTP)", "s3", f"{BUCKET}/{PREFIX}", files, ingest, requests)
    finally:
        server.stop()
    if folder:
        root = Path(FOLDERS.name) / "manuals"
        root.mkdir()
        files = [(f"{n:05}.txt", text_of(n, "folder")) for n in range(entries)]
        for name, data in files:
            (root / name).write_bytes(data)
        measure("folder", "folder", str(root), files, False, None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--no-folder", action="store_true")
    parser.add_argument(
        "--no-ingest", action="store_true", help="skip ingestion and the bare rate"
    )
    args = parser.parse_args()
    databases = setup_databases(verbosity=0, interactive=False)
    try:
        run(args.entries, not args.no_folder, not args.no_ingest)
    finally:
        teardown_databases(databases, verbosity=0)
        MEDIA.cleanup()
        FOLDERS.cleanup()


if __name__ == "__main__":
    main()
