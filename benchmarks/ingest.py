"""Ingestion throughput through Quire's real pipeline, beside the embedder's own rate.

    .venv/bin/python benchmarks/ingest.py [--data ../shared/data] [--no-limits]
                                          [--limits-only]

Ingests, format by format, the shared documents with documents.services.ingestion
(read in the reader child process, page images rendered at PAGE_IMAGE_WIDTH,
chunked, embedded, replaced in one transaction): the text PDFs of pdfs/text plus
the 117-page book, the ingestable DOCX, PPTX, XLSX, HTML and EPUB files of
office/, 300 SciFact abstracts as plain text and the demo's Markdown guides.
For each format it prints the pipeline's chunks/s and the embedder's own
chunks/s on the same chunks, and their ratio: right after each document is
ingested, its chunks are embedded again in one call with the bare embedder
(the same text the pipeline embeds: `retrieval_text`, context and text), so
that both figures see the same machine (other work on a shared machine moves
them together). The pipeline embeds while the reader child reads; the stages
printed for each format overlap accordingly. Scanned PDFs and images are read by OCR:
their pages/s and seconds per page are printed apart.

Then the ingestion limits (unless --no-limits): page-image bytes per input byte
for a 100-page PDF sharing one noise image, and the time a worker spends on a
PDF whose pages draw a million rectangles.

Runs in a throwaway database (created, migrated and dropped here) and a
temporary media folder, so it leaves nothing behind.
"""

import argparse
import collections
import functools
import json
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
from django.core.files.base import ContentFile  # noqa: E402
from django.test.utils import setup_databases, teardown_databases  # noqa: E402

from documents.access import COMMAND_LINE  # noqa: E402
from documents.ingestion import embeddings  # noqa: E402
from documents.ingestion.context import retrieval_text  # noqa: E402
from documents.ingestion.parsers import start_reader  # noqa: E402
from documents.models import Chunk, Document, Page  # noqa: E402
from documents.services import ingestion as ingestion_service  # noqa: E402
from documents.services.channels import create_channel  # noqa: E402
from documents.services.documents import create_document  # noqa: E402
from documents.services.ingestion import ingest_document  # noqa: E402
from documents.tests.fixtures import noise_image_pdf, rectangles_pdf  # noqa: E402

BOOK = "pdfs/misc/pypdf-sample__009-pdflatex-geotopo_GeoTopo-komprimiert.pdf"
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


def instrument(embedder):
    """Time the pipeline's stages where the service calls them; returns the
    bare embedding function for the raw measurement."""
    for stage, name in (
        ("read (reader child; embedding meanwhile)", "parse_file"),
        ("embedding left after reading", "_embed"),
        ("store page images", "store_page_images"),
        ("replace rows (one transaction)", "_replace_content"),
    ):
        setattr(ingestion_service, name, timed(stage, getattr(ingestion_service, name)))
    bare = embedder.embed_documents
    embedder.embed_documents = timed("embedder busy (worker thread)", bare)
    return bare


def groups(data: Path) -> dict[str, list[tuple[str, bytes]]]:
    """Files by format: (name, bytes)."""

    def files(pattern: str) -> list[tuple[str, bytes]]:
        return [(path.name, path.read_bytes()) for path in sorted(data.glob(pattern))]

    scifact = []
    corpus = data / "scifact" / "corpus.jsonl"
    if corpus.exists():
        with corpus.open() as handle:
            for line, _ in zip(handle, range(300), strict=False):
                item = json.loads(line)
                text = f"{item.get('title', '').strip()}\n\n{item['text']}"
                scifact.append((f"{item['_id']}.txt", text.encode()))
    return {
        "PDF (text)": [*files("pdfs/text/*.pdf"), *files(BOOK)],
        "DOCX": files("office/docx/*.docx"),
        "PPTX": files("office/pptx/*.pptx"),
        "XLSX": files("office/xlsx/*.xlsx"),
        "HTML": files("office/html/*.html"),
        "EPUB": files("office/epub/*.epub"),
        "plain text": scifact,
        "Markdown": [
            (path.name, path.read_bytes())
            for path in sorted((ROOT / "demo" / "documents").glob("*.md"))
        ],
        "OCR (scans, images)": [
            *files("pdfs/scanned/*.pdf"),
            *[item for item in files("office/ocr/*") if not item[0].endswith(".txt")],
        ],
    }


def ingest_group(name: str, items: list[tuple[str, bytes]], bare) -> dict:
    channel = create_channel(slug=f"bench-{abs(hash(name)) % 10**8}", name=name)
    documents = []
    pipeline = raw = 0.0
    for filename, data in items:
        try:
            document = create_document(
                actor=COMMAND_LINE,
                channel=channel,
                file=ContentFile(data, name=filename),
                enqueue=False,
            )
        except Exception:  # refused at upload (legacy, duplicate): not ingested
            continue
        started = time.perf_counter()
        document = ingest_document(document_id=document.pk)
        pipeline += time.perf_counter() - started
        if document.status != Document.Status.READY:
            continue
        documents.append(document)
        # The bare embedder embeds exactly what the pipeline embedded: each
        # chunk's context with its text.
        texts = [
            retrieval_text(context, text)
            for context, text in Chunk.objects.filter(document=document)
            .order_by("order")
            .values_list("context", "text")
        ]
        started = time.perf_counter()
        if texts:
            bare(texts)
        raw += time.perf_counter() - started
    pages = Page.objects.filter(document__in=documents)
    return {
        "files": len(documents),
        "pages": pages.count(),
        "ocr_pages": pages.filter(ocr=True).count(),
        "chunks": Chunk.objects.filter(document__in=documents).count(),
        "pipeline": pipeline,
        "raw": raw,
    }


def run(data: Path, limits: bool, only: list[str]) -> None:
    # As an ingest worker does at boot: the reader child starts while the
    # model loads, so the first file doesn't pay either start.
    start_reader()
    embedder = embeddings.get_embedder()
    embedder.embed_documents(["warm-up: load the model before timing"])
    print(
        f"embedder: {embedder.model_name}; page images {settings.PAGE_IMAGE_WIDTH}px; "
        f"{os.cpu_count()} cores"
    )
    bare = instrument(embedder)
    results = {}
    for name, items in groups(data).items():
        if only and not any(name.lower().startswith(o.lower()) for o in only):
            continue
        if items:
            STAGES.clear()
            results[name] = ingest_group(name, items, bare)
            results[name]["stages"] = dict(STAGES)
    print(
        f"{'format':22} {'files':>5} {'pages':>6} {'chunks':>6} {'pipeline s':>10} "
        f"{'chunks/s':>9} {'embedder chunks/s':>17} {'ratio':>6}"
    )
    text_pipeline = text_raw = 0.0
    for name, result in results.items():
        if name.startswith("OCR"):
            continue
        pipeline, raw, chunks = result["pipeline"], result["raw"], result["chunks"]
        text_pipeline += pipeline
        text_raw += raw
        print(
            f"{name:22} {result['files']:5d} {result['pages']:6d} {chunks:6d} "
            f"{pipeline:10.1f} {chunks / pipeline:9.1f} "
            f"{chunks / max(raw, 1e-9):17.1f} {raw / pipeline:6.2f}"
        )
    chunks = sum(r["chunks"] for n, r in results.items() if not n.startswith("OCR"))
    if chunks:
        print(
            f"{'all text documents':22} {'':5} {'':6} {chunks:6d} "
            f"{text_pipeline:10.1f} "
            f"{chunks / text_pipeline:9.1f} {chunks / text_raw:17.1f} "
            f"{text_raw / text_pipeline:6.2f}"
        )
    for name, result in results.items():
        if name.startswith("OCR") or not result["pipeline"]:
            continue
        print(f"{name} stages (of {result['pipeline']:.1f} s):")
        for stage, seconds in result["stages"].items():
            share = 100 * seconds / result["pipeline"]
            print(f"  {stage}: {seconds:.1f} s ({share:.0f}%)")
    ocr = results.get("OCR (scans, images)")
    if ocr:
        print(
            f"OCR: {ocr['files']} files, {ocr['pages']} pages ({ocr['ocr_pages']} read "
            f"by OCR) in {ocr['pipeline']:.1f} s: {ocr['pages'] / ocr['pipeline']:.2f} "
            f"pages/s, {ocr['pipeline'] / ocr['pages']:.2f} s per page (whole "
            f"pipeline; languages {settings.OCR_LANGUAGES})"
        )
    if limits:
        run_limits()


def run_limits() -> None:
    channel = create_channel(slug="bench-limits", name="Limits")
    noise = noise_image_pdf(pages=100, side=560)
    started = time.perf_counter()
    document = create_document(
        actor=COMMAND_LINE,
        channel=channel,
        file=ContentFile(noise, name="noise.pdf"),
        enqueue=False,
    )
    document = ingest_document(document_id=document.pk)
    seconds = time.perf_counter() - started
    pages = list(Page.objects.filter(document=document))
    stored = sum(page.image.size for page in pages if page.image)
    print(
        f"noise-image PDF: {len(noise) / 1000:.0f} kB, {len(pages)} pages -> "
        f"{stored / 1e6:.2f} MB of page images ({sum(bool(p.image) for p in pages)} "
        f"pages with an image) = {stored / len(noise):.1f} image bytes per input "
        f"byte, in {seconds:.1f} s"
    )
    for pages_count in (1, 10):
        hostile = rectangles_pdf(1_000_000, pages=pages_count)
        started = time.perf_counter()
        document = create_document(
            actor=COMMAND_LINE,
            channel=channel,
            file=ContentFile(hostile, name=f"rectangles-{pages_count}.pdf"),
            enqueue=False,
        )
        document = ingest_document(document_id=document.pk)
        seconds = time.perf_counter() - started
        print(
            f"PDF drawing 1,000,000 rectangles on each of {pages_count} page(s) "
            f"({len(hostile) / 1e6:.1f} MB): worker busy {seconds:.1f} s, status "
            f"{document.status}, {document.page_count} pages kept "
            f"(PAGE_RENDER_TIMEOUT {settings.PAGE_RENDER_TIMEOUT:g} s)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--no-limits", action="store_true")
    parser.add_argument("--limits-only", action="store_true")
    parser.add_argument(
        "--formats", default="", help='only these formats, e.g. "PDF,HTML"'
    )
    args = parser.parse_args()
    databases = setup_databases(verbosity=0, interactive=False)
    try:
        if args.limits_only:
            run_limits()
        else:
            only = [f.strip() for f in args.formats.split(",") if f.strip()]
            run(args.data, not args.no_limits, only)
    finally:
        teardown_databases(databases, verbosity=0)
        MEDIA.cleanup()


if __name__ == "__main__":
    main()
