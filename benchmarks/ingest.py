"""Ingestion throughput through Quire's real pipeline, with the real embedder.

    .venv/bin/python benchmarks/ingest.py [--pdfs ../shared/data/pdfs]

Ingests every PDF of text/ plus the 117-page book in misc/ with
documents.services.documents (parse in the PDFium child process, render PNGs at
PAGE_IMAGE_WIDTH, chunk, embed, replace in one transaction), then embeds the
same chunk texts again with the bare embedder. Prints pages/s and chunks/s of
the pipeline, the embedder's raw chunks/s, and the ratio pipeline/raw.

Runs in a throwaway database (created, migrated and dropped here) and a
temporary media folder, so it leaves nothing behind.
"""

import argparse
import collections
import functools
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
os.environ["QUIRE_TEST_DATABASE"] = f"quire_bench_ingest_{os.getpid()}"
MEDIA = tempfile.TemporaryDirectory(prefix="quire-bench-media-")
os.environ["MEDIA_ROOT"] = MEDIA.name
os.environ["STORAGE_BACKEND"] = "filesystem"

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.files import File  # noqa: E402
from django.test.utils import setup_databases, teardown_databases  # noqa: E402

from documents.access import COMMAND_LINE  # noqa: E402
from documents.ingestion import embeddings  # noqa: E402
from documents.models import Chunk  # noqa: E402
from documents.services import documents as document_services  # noqa: E402
from documents.services.channels import create_channel  # noqa: E402
from documents.services.documents import create_document, ingest_document  # noqa: E402

BOOK = "misc/pypdf-sample__009-pdflatex-geotopo_GeoTopo-komprimiert.pdf"
STAGES: collections.Counter = collections.Counter()


def timed(stage: str, function):
    """Wrap `function` so its wall time adds up under STAGES[stage]."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            STAGES[stage] += time.perf_counter() - started

    return wrapper


def instrument(embedder) -> None:
    """Time the pipeline's stages where the service calls them."""
    for stage, name in (
        ("parse + render (PDFium child)", "parse_file"),
        ("chunk", "chunk_pages"),
        ("store page images", "store_page_images"),
        ("replace rows (one transaction)", "_replace_content"),
    ):
        setattr(
            document_services,
            name,
            timed(stage, getattr(document_services, name)),
        )
    embedder.embed_documents = timed("embed", embedder.embed_documents)


def run(pdfs: Path) -> None:
    files = sorted((pdfs / "text").glob("*.pdf")) + [pdfs / BOOK]
    channel = create_channel(slug="bench-ingest", name="Ingestion benchmark")
    embedder = embeddings.get_embedder()
    embedder.embed_documents(["warm-up: load the model before timing"])
    instrument(embedder)

    pages = chunks = 0
    failed: list[str] = []
    started = time.perf_counter()
    for path in files:
        with path.open("rb") as handle:
            document = create_document(
                actor=COMMAND_LINE,
                channel=channel,
                file=File(handle, name=path.name),
                content_type="application/pdf",
                enqueue=False,
            )
        document = ingest_document(document_id=document.pk)
        if document.status != "ready":
            failed.append(f"{path.name}: {document.status_reason}")
        pages += document.page_count
        chunks += document.chunk_count
    pipeline = time.perf_counter() - started

    texts = list(
        Chunk.objects.filter(channel=channel)
        .order_by("document_id", "order")
        .values_list("text", flat=True)
    )
    stages = dict(STAGES)
    started = time.perf_counter()
    embedder.embed_documents(texts)
    raw = time.perf_counter() - started

    print(f"files: {len(files)} ({len(failed)} failed)")
    for line in failed:
        print(f"  {line}")
    print(f"embedder: {embedder.model_name}; page images {settings.PAGE_IMAGE_WIDTH}px")
    print(f"pipeline: {pages} pages, {chunks} chunks in {pipeline:.1f} s")
    print(f"pipeline: {pages / pipeline:.1f} pages/s, {chunks / pipeline:.1f} chunks/s")
    for stage, seconds in stages.items():
        print(f"  {stage}: {seconds:.1f} s ({100 * seconds / pipeline:.0f}%)")
    print(f"embedder alone: {len(texts) / raw:.1f} chunks/s ({raw:.1f} s)")
    print(f"ratio pipeline/raw (chunks/s): {raw / pipeline:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--pdfs", type=Path, default=ROOT.parent / "shared" / "data" / "pdfs"
    )
    args = parser.parse_args()
    databases = setup_databases(verbosity=0, interactive=False)
    try:
        run(args.pdfs)
    finally:
        teardown_databases(databases, verbosity=0)
        MEDIA.cleanup()


if __name__ == "__main__":
    main()
