"""Fault: kill and stop the task worker in the middle of each task kind (a
117-page PDF's re-ingestion, then its answers preparation), restart it, and
check that nothing was lost, duplicated or left RUNNING.

    .venv/bin/python benchmarks/faults/worker_kill.py      (make bench-faults)

Runs in its own stack (.data/bench-worker-kill). Steps: ingest the book once
(the old version, timed), queue a re-ingestion, start `manage.py ingest_worker`,
SIGKILL its process group (worker and PDF reader) halfway through the measured
ingestion time, start a new worker (its start-up recovery requeues the
document), and wait for the new version. That worker then runs
prepare_answers_task: SIGKILL it mid-task too, start another (recovery requeues
the task), SIGTERM that one mid-task (it must hand the task back within
WORKER_STOP_TIMEOUT), and let a last worker finish it. Meanwhile searchers read
through the MCP endpoint (uvicorn, 2 workers) and straight from the database,
and every snapshot must show exactly the old version or exactly the new one.
Prints the figures and exits 1 if any check fails.
"""

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import stack  # noqa: E402

BOOK = (
    stack.SHARED_DATA
    / "pdfs/misc/pypdf-sample__009-pdflatex-geotopo_GeoTopo-komprimiert.pdf"
)
QUERIES = ["Topologie", "Homotopie", "Fundamentalgruppe", "stetige Abbildung"]
STOP_TIMEOUT = 3.0  # WORKER_STOP_TIMEOUT of the worker stopped with SIGTERM


class Searchers:
    """Threads that search the book over MCP and count its rows in the database,
    recording every snapshot."""

    def __init__(self, url: str, key: str, document_id: int):
        self.url, self.key, self.document_id = url, key, document_id
        self.stop = threading.Event()
        self.mcp_snapshots: list[frozenset[int]] = []
        self.db_snapshots: list[tuple[int, int, int, int]] = []
        self.errors: list[str] = []
        self.threads = [
            threading.Thread(target=self._search_over_mcp, daemon=True),
            threading.Thread(target=self._count_in_database, daemon=True),
        ]

    def start(self):
        for thread in self.threads:
            thread.start()

    def finish(self):
        self.stop.set()
        for thread in self.threads:
            thread.join()

    def _search_over_mcp(self):
        turn = 0
        while not self.stop.is_set():
            query = QUERIES[turn % len(QUERIES)]
            turn += 1
            arguments = {
                "query": query,
                "document_ids": [self.document_id],
                "limit": 50,
            }
            status, reply, _ = stack.mcp_call(
                self.url,
                self.key,
                "tools/call",
                {"name": "retrieve_text_chunks", "arguments": arguments},
            )
            result = reply.get("result") or {}
            if status != 200 or result.get("isError"):
                self.errors.append(f"search: {status} {reply}")
            else:
                chunks = result["structuredContent"]["chunks"]
                self.mcp_snapshots.append(frozenset(c["chunk_id"] for c in chunks))
            time.sleep(0.05)

    def _count_in_database(self):
        from django.db import connection

        # One statement: one snapshot of pages and chunks.
        sql = """
            SELECT (SELECT count(*) FROM documents_page WHERE document_id = %s),
                   count(*), coalesce(min(id), 0), coalesce(max(id), 0)
            FROM documents_chunk WHERE document_id = %s
        """
        try:
            while not self.stop.is_set():
                with connection.cursor() as cursor:
                    cursor.execute(sql, [self.document_id] * 2)
                    self.db_snapshots.append(tuple(cursor.fetchone()))
                time.sleep(0.05)
        finally:
            connection.close()


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise SystemExit(f"Timed out waiting for {what}")


def main() -> int:

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--kill-at", type=float, default=0.5, help="fraction of the ingestion time"
    )
    args = parser.parse_args()
    env = stack.boot("worker-kill", MCP_RATE_LIMIT_PER_MINUTE="0")
    from django.core.files import File
    from django.tasks import TaskResultStatus
    from django_tasks_db.models import DBTaskResult

    from documents.access import COMMAND_LINE
    from documents.models import Channel, Chunk, Document, Page
    from documents.services.channels import create_channel
    from documents.services.documents import create_document, reingest_document
    from documents.services.ingestion import ingest_document
    from documents.services.keys import create_api_key
    from documents.tasks import prepare_answers_task

    seen: set = set()

    def answer_rows(*statuses):
        rows = DBTaskResult.objects.filter(
            task_path=prepare_answers_task.module_path,
            args_kwargs__args__0=document.pk,
        )
        return rows.filter(status__in=statuses) if statuses else rows

    def wait_mid_answers(what: str) -> None:
        """Until `what` has run a new prepare_answers_task row for 2 s (not the
        row a killed worker left RUNNING)."""
        row = wait_for(
            lambda: answer_rows(TaskResultStatus.RUNNING).exclude(pk__in=seen).first(),
            300,
            f"{what} to start prepare_answers_task",
        )
        seen.add(row.pk)
        time.sleep(2)

    Channel.objects.filter(slug="book").delete()
    DBTaskResult.objects.all().delete()
    channel = create_channel(slug="book", name="Book")
    key = create_api_key(
        actor=COMMAND_LINE, name="fault searcher", channels=[channel]
    ).raw_key
    with BOOK.open("rb") as handle:
        document = create_document(
            actor=COMMAND_LINE,
            channel=channel,
            file=File(handle),
            filename=BOOK.name,
            enqueue=False,
        )
    started = time.monotonic()
    document = ingest_document(document_id=document.pk)
    first_ingestion = time.monotonic() - started
    assert document.status == Document.Status.READY, document.status_reason
    old_chunks = set(
        Chunk.objects.filter(document=document).values_list("pk", flat=True)
    )
    old_pages = document.page_count
    print(
        f"First ingestion: {document.page_count} pages, {len(old_chunks)} chunks "
        f"in {first_ingestion:.1f} s"
    )

    port = stack.free_port()
    web = stack.start_web(env, workers=2, port=port)
    searchers = Searchers(f"http://127.0.0.1:{port}/mcp/book", key, document.pk)
    searchers.start()
    worker = None
    failures = []
    try:
        reingest_document(actor=COMMAND_LINE, document=document)
        worker = stack.start_worker(env, "--recovery-interval", "0")
        wait_for(
            lambda: Document.objects.filter(pk=document.pk, reingesting=True).exists(),
            60,
            "the worker to start the re-ingestion",
        )
        time.sleep(first_ingestion * args.kill_at)
        killed_at = time.monotonic()
        stack.stop(worker, signal.SIGKILL)
        print(
            f"SIGKILL sent to the worker {first_ingestion * args.kill_at:.1f} s "
            "into the re-ingestion"
        )
        time.sleep(1)
        stuck = DBTaskResult.objects.running().count()
        document.refresh_from_db()
        print(
            f"After the kill: document {document.status} ({document.status_reason!r}), "
            f"{stuck} task row(s) left RUNNING, "
            f"{Chunk.objects.filter(document=document).count()} chunks (old version)"
        )
        worker = stack.start_worker(env, "--recovery-interval", "0")
        restarted = time.monotonic()
        document = wait_for(
            lambda: Document.objects.filter(
                pk=document.pk,
                status=Document.Status.READY,
                reingesting=False,
                ingested_at__gt=document.ingested_at,
            ).first(),
            900,
            "the requeued re-ingestion to finish",
        )
        recovered = time.monotonic()

        # prepare_answers_task: the worker killed mid-task...
        wait_mid_answers("the restarted worker")
        stack.stop(worker, signal.SIGKILL)
        time.sleep(1)
        left_running = answer_rows(TaskResultStatus.RUNNING).count()
        print(
            "SIGKILL sent to the worker during prepare_answers_task: "
            f"{left_running} task row(s) left RUNNING"
        )
        # ... then the next worker's recovery requeues it, and a SIGTERM mid-task
        # must hand it back within WORKER_STOP_TIMEOUT.
        worker = stack.start_worker(
            {**env, "WORKER_STOP_TIMEOUT": str(STOP_TIMEOUT)},
            "--recovery-interval",
            "0",
        )
        wait_mid_answers("the next worker")
        stopping = time.monotonic()
        os.killpg(worker.pid, signal.SIGTERM)
        try:
            worker.wait(timeout=STOP_TIMEOUT + 30)
        except subprocess.TimeoutExpired:
            failures.append("the worker did not stop after SIGTERM")
        stop_seconds = time.monotonic() - stopping
        print(
            f"SIGTERM sent to the next worker during prepare_answers_task: it "
            f"exited after {stop_seconds:.1f} s (WORKER_STOP_TIMEOUT "
            f"{STOP_TIMEOUT:.0f} s), {answer_rows(TaskResultStatus.READY).count()} "
            f"task handed back, {answer_rows(TaskResultStatus.RUNNING).count()} left "
            "RUNNING"
        )
        if stop_seconds > STOP_TIMEOUT + 10:
            failures.append(f"the graceful stop took {stop_seconds:.1f} s")
        if not answer_rows(TaskResultStatus.READY).exists():
            failures.append("the stopped worker did not hand its task back")
        worker = stack.start_worker(env, "--recovery-interval", "0")
        wait_for(
            lambda: answer_rows(TaskResultStatus.SUCCESSFUL).exists(),
            1800,
            "prepare_answers_task to finish",
        )
        outcomes = sorted(
            f"{status} {reason.rsplit('.', 1)[-1]}".strip()
            for status, reason in answer_rows().values_list(
                "status", "exception_class_path"
            )
        )
        print(f"prepare_answers_task rows: {', '.join(outcomes)}")
        if left_running != 1:
            failures.append(f"{left_running} answers rows RUNNING after the kill")
        time.sleep(3)  # searches of the new version
    finally:
        searchers.finish()
        if worker is not None:
            stack.stop(worker)
        stack.stop(web)

    new_chunks = set(
        Chunk.objects.filter(document=document).values_list("pk", flat=True)
    )
    pages = list(
        Page.objects.filter(document=document).values_list("number", flat=True)
    )
    orders = list(
        Chunk.objects.filter(document=document).values_list("order", flat=True)
    )
    if document.status != Document.Status.READY:
        failures.append(f"status {document.status}")
    if (
        sorted(pages) != list(range(1, old_pages + 1))
        or document.page_count != old_pages
    ):
        failures.append(f"pages {len(pages)} (expected one copy of {old_pages})")
    if len(orders) != len(set(orders)) or len(new_chunks) != document.chunk_count:
        failures.append(f"chunks {len(new_chunks)}, distinct orders {len(set(orders))}")
    if new_chunks & old_chunks:
        failures.append("old chunks survived beside the new ones")
    if DBTaskResult.objects.running().exists():
        failures.append("a task row is still RUNNING")
    versions = {"old": 0, "new": 0}
    for snapshot in searchers.mcp_snapshots:
        if snapshot and snapshot <= old_chunks:
            versions["old"] += 1
        elif snapshot and snapshot <= new_chunks:
            versions["new"] += 1
        else:
            failures.append(f"a search saw a mix or nothing: {sorted(snapshot)[:5]}")
            break
    counts = {
        (len(old_chunks), min(old_chunks), max(old_chunks)),
        (len(new_chunks), min(new_chunks), max(new_chunks)),
    }
    for page_count, chunk_count, low, high in searchers.db_snapshots:
        if page_count != old_pages or (chunk_count, low, high) not in counts:
            failures.append(
                f"a database snapshot saw {page_count} pages, {chunk_count} chunks"
            )
            break
    failures.extend(searchers.errors[:3])
    running = DBTaskResult.objects.running().count()
    mixed = any("database snapshot" in failure for failure in failures)
    print(
        f"Recovery: requeued at worker start; new version ready "
        f"{recovered - restarted:.1f} s after the restart "
        f"({recovered - killed_at:.1f} s after the kill)"
    )
    print(
        f"Final: {document.status}, {len(pages)} pages, {len(new_chunks)} chunks, "
        f"{running} task rows RUNNING"
    )
    print(
        f"Searches over MCP: {len(searchers.mcp_snapshots)} (old version "
        f"{versions['old']}, new version {versions['new']}), errors "
        f"{len(searchers.errors)}"
    )
    print(
        f"Database snapshots: {len(searchers.db_snapshots)}, each exactly the old "
        f"or the new version: {'NO' if mixed else 'yes'}"
    )
    if failures:
        print("FAILED:", *failures, sep="\n  ")
        return 1
    print("OK: nothing lost, nothing duplicated, no mixed version seen")
    return 0


if __name__ == "__main__":
    sys.exit(main())
