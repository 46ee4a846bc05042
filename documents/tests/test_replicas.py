"""Read replicas (documents.replicas) against a real streaming standby."""

import json
import re

import pytest
from django.core.files.base import ContentFile
from django.db import connections
from django.test import Client

from documents import listing, replicas
from documents.access import COMMAND_LINE
from documents.models import Chunk, Document
from documents.search.service import retrieve_chunks
from documents.services.keys import create_api_key
from documents.telemetry import metrics, readiness
from documents.tests.corpus import add_document
from documents.tests.replica import REPLICA_DATABASES, use_replica
from documents.tests.replica import standby as standby  # the fixture

CHUNKS = Chunk._meta.db_table
pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True, databases=REPLICA_DATABASES),
]


@pytest.fixture
def handbook(make_channel, fake_embedder):
    channel = make_channel("handbook")
    add_document(
        channel,
        title="Holiday policy",
        pages=["Employees receive twenty five days of paid holiday each year."],
    )
    return channel


@pytest.fixture
def clock(monkeypatch):
    """The replicas' clock, moved by the test."""
    now = [1000.0]
    monkeypatch.setattr(replicas, "_clock", lambda: now[0])
    return now


def scans_after(replica, alias: str) -> int:
    """The standby's chunk-table scans once this process's connection to it
    has closed (a backend reports its statistics when it exits)."""
    connections[alias].close()
    return replica.table_scans(CHUNKS)


def test_search_reads_the_replica_and_an_upload_status_the_primary(
    standby, handbook, clock, settings, request
):
    """A search runs on the replica (its own statistics count the scans) and
    finds what the primary finds; while the replica has not replayed an
    upload, the upload's status still answers (from the primary). A replica
    lagging past REPLICA_MAX_LAG is skipped once its cached state expires, and
    used again once it has caught up."""
    standby.wait_for_replay()
    on_primary = retrieve_chunks(handbook, "paid holiday")
    assert on_primary
    with use_replica() as alias:
        before = scans_after(standby, alias)
        on_replica = retrieve_chunks(handbook, "paid holiday")
        assert [c.chunk_id for c in on_replica] == [c.chunk_id for c in on_primary]
        assert scans_after(standby, alias) > before
        assert listing.list_documents(handbook)["total_count"] == 1
        body, _ = metrics.render()
        lag = re.search(
            rf'quire_replica_lag_seconds{{replica="{alias}"}} (\S+)', body.decode()
        )
        assert lag and float(lag.group(1)) <= settings.REPLICA_MAX_LAG

        with standby.connect() as conn:
            conn.execute("SELECT pg_wal_replay_pause()")
        request.addfinalizer(standby.resume_replay)
        key = create_api_key(
            actor=COMMAND_LINE, name="script", channels=[handbook], scopes=["write"]
        ).raw_key
        api = Client(headers={"Authorization": f"Bearer {key}"})
        upload = ContentFile(b"# Parking\n\nPark in the yard.")
        upload.name = "parking.md"
        created = api.post(
            "/api/channels/handbook/documents",
            {"file": upload, "metadata": json.dumps({})},
        )
        assert created.status_code == 202, created.content
        document_id = created.json()["id"]
        assert not Document.objects.using(alias).filter(pk=document_id).exists()
        status = api.get(f"/api/channels/handbook/documents/{document_id}")
        assert status.status_code == 200, status.content
        assert status.json()["status"] == "pending"

        settings.REPLICA_MAX_LAG = 0.0
        cached = replicas.replica_states()
        clock[0] += settings.REPLICA_CHECK_SECONDS / 2
        assert replicas.replica_states() == cached, "not measured again yet"
        clock[0] += settings.REPLICA_CHECK_SECONDS
        assert replicas.choose_replica() is None
        assert replicas.replica_states()[0].lag > 0
        before = scans_after(standby, alias)
        assert retrieve_chunks(handbook, "paid holiday")
        assert scans_after(standby, alias) == before

        standby.resume_replay()
        standby.wait_for_replay()
        clock[0] += settings.REPLICA_CHECK_SECONDS
        assert replicas.choose_replica() == alias


def test_a_replica_stopped_mid_run_fails_no_call(standby, handbook, clock, settings):
    """Searches keep answering, the same, when the replica stops between two of
    them: the read that meets the dead connection runs again on the primary,
    and the replica is skipped from then on."""
    standby.wait_for_replay()
    try:
        with use_replica() as alias:
            expected = [c.chunk_id for c in retrieve_chunks(handbook, "paid holiday")]
            assert replicas.choose_replica() == alias
            answers = []
            for call in range(10):
                if call == 4:
                    standby.stop()
                answers.append(
                    [c.chunk_id for c in retrieve_chunks(handbook, "paid holiday")]
                )
            assert answers == [expected] * 10
            assert replicas.choose_replica() is None
            clock[0] += settings.REPLICA_CHECK_SECONDS
            assert replicas.choose_replica() is None, "still down when checked again"
            assert [s.reachable for s in replicas.replica_states()] == [False]
            checks = readiness.run_checks()
            assert checks["replicas"] == "1 of 1 replicas unavailable or lagging"
            assert readiness.is_ready({**checks, "worker": readiness.OK}), (
                "a replica down does not take the server out of rotation"
            )
    finally:
        standby.start()
