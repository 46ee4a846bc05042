"""/healthz, /readyz and who may read /metrics."""

import datetime
import ipaddress
import json

import pytest
from django.test import Client
from django.utils import timezone

from documents.models import WorkerHeartbeat
from documents.services import workers

pytestmark = pytest.mark.django_db


def test_healthz_answers_without_asking_anything():
    response = Client().get("/healthz")
    assert response.status_code == 200
    assert json.loads(response.content) == {"status": "ok"}
    assert Client().post("/healthz").status_code == 405


def test_readyz_needs_a_worker_seen_recently_and_tells_no_configuration(settings):
    WorkerHeartbeat.objects.all().delete()  # workers other tests ran
    response = Client().get("/readyz")
    assert response.status_code == 503
    body = json.loads(response.content)
    assert body["status"] == "not ready"
    assert body["checks"] == {
        "database": "ok",
        "migrations": "ok",
        "embedder": "ok",
        "worker": "no worker seen",
        "replicas": "ok",
    }

    workers.beat("worker-a", started_at=timezone.now())
    response = Client().get("/readyz")
    assert response.status_code == 200
    assert json.loads(response.content)["status"] == "ready"

    # A heartbeat older than WORKER_SEEN_SECONDS is no worker.
    WorkerHeartbeat.objects.update(
        seen_at=timezone.now()
        - datetime.timedelta(seconds=settings.WORKER_SEEN_SECONDS + 1)
    )
    assert Client().get("/readyz").status_code == 503
    workers.stopped("worker-a")
    assert not WorkerHeartbeat.objects.exists()


def test_a_stale_heartbeat_is_forgotten_after_a_day():
    now = timezone.now()
    workers.beat("old", started_at=now, now=now - datetime.timedelta(days=2))
    workers.beat("new", started_at=now, now=now)
    ids = set(WorkerHeartbeat.objects.values_list("worker_id", flat=True))
    assert "new" in ids and "old" not in ids


def test_metrics_exist_only_for_declared_addresses_or_the_token(settings):
    settings.METRICS_ALLOWED_ADDRESSES = []
    settings.METRICS_TOKEN = ""
    assert Client().get("/metrics").status_code == 404

    settings.METRICS_ALLOWED_ADDRESSES = [ipaddress.ip_network("10.0.0.0/8")]
    assert Client().get("/metrics").status_code == 404
    assert Client(REMOTE_ADDR="10.1.2.3").get("/metrics").status_code == 200

    settings.METRICS_ALLOWED_ADDRESSES = []
    settings.METRICS_TOKEN = "s3cret-metrics-token"
    assert Client().get("/metrics").status_code == 404
    wrong = Client(headers={"Authorization": "Bearer nope"})
    assert wrong.get("/metrics").status_code == 404
    right = Client(headers={"Authorization": "Bearer s3cret-metrics-token"})
    response = right.get("/metrics")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    assert b"quire_documents" in response.content


def test_a_forwarded_address_counts_only_through_trusted_proxies(settings):
    settings.METRICS_ALLOWED_ADDRESSES = [ipaddress.ip_network("10.0.0.0/8")]
    settings.PROXY_TRUSTED_HOPS = 0
    spoofed = Client(REMOTE_ADDR="203.0.113.9", HTTP_X_FORWARDED_FOR="10.1.2.3")
    assert spoofed.get("/metrics").status_code == 404
    settings.PROXY_TRUSTED_HOPS = 1
    proxied = Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="10.1.2.3")
    assert proxied.get("/metrics").status_code == 200
