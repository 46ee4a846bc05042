"""Quire's Prometheus metrics, defined once.

Counters and histograms are updated where things happen (an MCP call ends, an
admission is refused); gauges of the database (documents by status, the
ingestion queue, syncs, workers) are read when /metrics is scraped, by
`DatabaseCollector`, so every process reports the same numbers and nothing
polls in the background. Label values are bounded: a method or tool name a
client made up is counted as "other", a channel that does not exist as "-".

Several processes behind one address (uvicorn workers, several servers): set
prometheus_client's PROMETHEUS_MULTIPROC_DIR and the scrape merges them
(`render`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator

from django.db.models import Count, Min
from django.tasks import TaskResultStatus
from django.utils import timezone
from django_tasks_db.models import DBTaskResult
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from documents.models import Document, SourceSync, WorkerHeartbeat
from documents.replicas import replica_states

OTHER = "other"
NO_CHANNEL = "-"
# Quire's own registry, not the library's process-wide default one.
QUIRE = CollectorRegistry()

MCP_CALLS = Counter(
    "quire_mcp_calls",
    "MCP requests by JSON-RPC method, tool, channel and outcome (ok, tool_error "
    "for an isError result, error <code>, or the transport's refusal).",
    ["method", "tool", "channel", "outcome"],
    registry=QUIRE,
)
MCP_CALL_SECONDS = Histogram(
    "quire_mcp_call_seconds",
    "Time to answer an MCP request, by method (a streamed answer: until its "
    "stream ends).",
    ["method"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
    registry=QUIRE,
)
ADMISSION_REFUSALS = Counter(
    "quire_admission_refusals",
    "Credentials refused at admission, by door (mcp, rest, ...) and reason.",
    ["door", "reason"],
    registry=QUIRE,
)


def observe_call(
    *, method: str, tool: str, channel: str, outcome: str, seconds: float
) -> None:
    """Count one MCP request; the caller has bounded the labels already
    (`bounded`)."""
    MCP_CALLS.labels(method, tool, channel, outcome).inc()
    MCP_CALL_SECONDS.labels(method).observe(seconds)


def bounded(value: str, allowed: Iterable[str], *, empty: str = "") -> str:
    """`value` when it is one of `allowed`, "other" otherwise ("" stays
    `empty`)."""
    if not value:
        return empty
    return value if value in allowed else OTHER


def observe_refusal(*, door: str, status: int, error: str | None) -> None:
    """Count a refused admission (its HTTP status and RFC 6750 error) by
    reason: no_credentials, invalid_token (401), insufficient_scope, forbidden
    (403), throttled (429)."""
    if status == 429:
        reason = "throttled"
    elif status == 401:
        reason = error or "no_credentials"
    else:
        reason = error or "forbidden"
    ADMISSION_REFUSALS.labels(door or OTHER, reason).inc()


class DatabaseCollector(Collector):
    """Gauges read from PostgreSQL at scrape time."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        documents = GaugeMetricFamily(
            "quire_documents", "Documents by ingestion status.", labels=["status"]
        )
        counts = dict(
            Document.objects.values_list("status").annotate(n=Count("pk")).order_by()
        )
        for status in Document.Status.values:
            documents.add_metric([status], counts.get(status, 0))
        yield documents

        queued = DBTaskResult.objects.filter(status=TaskResultStatus.READY)
        depth = GaugeMetricFamily(
            "quire_task_queue_depth",
            "Tasks waiting for a worker (ingestion, syncs, answer preparation).",
            labels=["task"],
        )
        oldest = GaugeMetricFamily(
            "quire_task_queue_oldest_seconds",
            "Age of the oldest task waiting for a worker.",
            labels=["task"],
        )
        now = timezone.now()
        for path, count, first in (
            queued.values_list("task_path")
            .annotate(n=Count("pk"), first=Min("enqueued_at"))
            .order_by()
        ):
            name = path.rsplit(".", 1)[-1]
            depth.add_metric([name], count)
            oldest.add_metric([name], (now - first).total_seconds() if first else 0)
        yield depth
        yield oldest

        syncs = GaugeMetricFamily(
            "quire_source_syncs",
            "Source syncs recorded, by status (queued, listing and syncing ones "
            "are running now).",
            labels=["status"],
        )
        sync_counts = dict(
            SourceSync.objects.values_list("status").annotate(n=Count("pk")).order_by()
        )
        for status in SourceSync.Status.values:
            syncs.add_metric([status], sync_counts.get(status, 0))
        yield syncs

        workers = GaugeMetricFamily(
            "quire_workers_seen",
            "Ingestion workers whose heartbeat is recent (WORKER_SEEN_SECONDS).",
        )
        workers.add_metric([], WorkerHeartbeat.objects.recent(now).count())
        yield workers

        lag = GaugeMetricFamily(
            "quire_replica_lag_seconds",
            "Replay lag of each read replica (NaN when it does not answer or is "
            "not a standby); one past REPLICA_MAX_LAG is skipped.",
            labels=["replica"],
        )
        for state in replica_states(fresh=True):
            lag.add_metric([state.alias], math.nan if state.lag is None else state.lag)
        yield lag


def render() -> tuple[bytes, str]:
    """The exposition text of every metric, and its content type."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        registry.register(DatabaseCollector())
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(QUIRE), CONTENT_TYPE_LATEST


QUIRE.register(DatabaseCollector())
