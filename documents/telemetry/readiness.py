"""What /readyz checks before a load balancer sends this process traffic.

Each check answers ok or a short reason that names no host, path, version or
setting, so the endpoint can be public: the database answers, every migration
is applied, the embedder loads, and an ingestion worker was seen recently.
The replicas check is reported but does not make the process unready: reads
fall back to the primary, and every server shares the same replicas, so
failing on it would take them all out of a load balancer at once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor

from documents.ingestion.embeddings import get_embedder
from documents.models import WorkerHeartbeat
from documents.replicas import replica_states

logger = logging.getLogger(__name__)

OK = "ok"


def database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return OK


def migrations() -> str:
    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return OK if not plan else f"{len(plan)} migrations not applied"


def embedder() -> str:
    get_embedder()
    return OK


def worker() -> str:
    return OK if WorkerHeartbeat.objects.recent().exists() else "no worker seen"


def replicas() -> str:
    states = replica_states(fresh=True)
    unusable = sum(not state.usable for state in states)
    if not unusable:
        return OK
    return f"{unusable} of {len(states)} replicas unavailable or lagging"


CHECKS: dict[str, Callable[[], str]] = {
    "database": database,
    "migrations": migrations,
    "embedder": embedder,
    "worker": worker,
    "replicas": replicas,
}
# Reported, not required (the module's docstring says why).
ADVISORY = frozenset({"replicas"})


def is_ready(results: dict[str, str]) -> bool:
    """Whether every required check answered ok."""
    return all(answer == OK for name, answer in results.items() if name not in ADVISORY)


def run_checks() -> dict[str, str]:
    """Every check's answer; a check that raises is "unavailable" (logged
    with its reason, which may name configuration)."""
    results = {}
    for name, check in CHECKS.items():
        try:
            results[name] = check()
        except DatabaseError:
            logger.warning("Readiness check %s: database unavailable", name)
            results[name] = "database unavailable"
        except Exception:
            logger.exception("Readiness check %s failed", name)
            results[name] = "unavailable"
    return results
