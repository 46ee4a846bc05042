"""Trust (issue 11): key scopes, the audit trail, throttling, quotas and
de-duplicated ingestion, as a careless agent or a hostile client would meet them
through the REST API."""

import datetime

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.tasks import TaskResultStatus
from django.test import Client
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from documents.access import COMMAND_LINE, Actor
from documents.access.audit import prune_audit
from documents.models import AuditEvent, Document, RateLimitWindow
from documents.services.keys import create_api_key, revoke_api_key
from documents.services.queue import INGEST_TASK_PATH
from documents.tests.corpus import add_document

PROBLEM = "application/problem+json"


@pytest.fixture
def channel(make_channel, fake_embedder):
    channel = make_channel(
        "demo", fields=[{"name": "kind", "type": "string", "filterable": True}]
    )
    add_document(
        channel, title="Handbook", pages=["Torque values."], metadata={"kind": "faa"}
    )
    return channel


def client_for(raw_key: str, address: str = "127.0.0.1") -> Client:
    return Client(headers={"Authorization": f"Bearer {raw_key}"}, REMOTE_ADDR=address)


def read_key(channel) -> str:
    return create_api_key(actor=COMMAND_LINE, name="agent", channels=[channel]).raw_key


def write_key(channel) -> str:
    return create_api_key(
        actor=COMMAND_LINE, name="uploader", channels=[channel], scopes=["write"]
    ).raw_key


def upload(client: Client, channel, name: str = "notes.txt", **data):
    return client.post(
        f"/api/channels/{channel.slug}/documents",
        # Contents differ by name: the same file twice is not stored twice.
        {
            "file": SimpleUploadedFile(name, f"Notes: {name}".encode(), "text/plain"),
            **data,
        },
    )


def test_new_keys_are_read_only_unless_write_is_granted(channel):
    """A key is created with the read scope only; write is granted by name."""
    reader = create_api_key(actor=COMMAND_LINE, name="r", channels=[channel])
    writer = create_api_key(
        actor=COMMAND_LINE, name="w", channels=[channel], scopes=["write"]
    )
    assert reader.api_key.scopes == ["read"]
    assert writer.api_key.scopes == ["read", "write"]


def test_a_read_key_that_writes_gets_403_naming_the_scope(channel):
    """Item 3: the key handed to an agent for reading can't upload, delete or
    re-ingest; each attempt is a 403 problem naming the missing scope, nothing
    changes, and the attempt is in the audit trail."""
    agent = client_for(read_key(channel))
    document = Document.objects.get(title="Handbook")
    attempts = [
        upload(agent, channel),
        agent.delete(f"/api/channels/demo/documents/{document.pk}"),
        agent.post(f"/api/channels/demo/documents/{document.pk}/reingest"),
    ]
    for response in attempts:
        assert response.status_code == 403, response.content
        assert response["Content-Type"].startswith(PROBLEM)
        body = response.json()
        assert body["missing_scope"] == "write"
        assert "'write' scope" in body["detail"]
        assert 'error="insufficient_scope"' in response["WWW-Authenticate"]
    assert list(Document.objects.values_list("title", flat=True)) == ["Handbook"]
    assert not DBTaskResult.objects.exists()
    refused = AuditEvent.objects.filter(action=AuditEvent.Action.AUTH_REFUSED)
    assert refused.count() == 3
    assert all("agent" in event.actor for event in refused)
    # Reading still works with the same key.
    assert agent.get("/api/channels/demo/documents").status_code == 200


def test_every_write_is_recorded_with_its_actor(channel):
    """Uploads, re-ingests and deletes through the API are recorded with the key
    (prefix and name), the channel and the document; the document says who
    added it; creating and revoking keys are recorded too."""
    raw = write_key(channel)
    uploader = client_for(raw, "10.1.2.3")
    response = upload(uploader, channel)
    assert response.status_code == 202, response.content
    document = Document.objects.get(pk=response.json()["id"])
    assert document.created_by_key.prefix == raw[:10]
    assert response.json()["added_by"] == f"key {raw[:10]}… (uploader)"
    assert uploader.post(f"/api/channels/demo/documents/{document.pk}/reingest")
    assert uploader.delete(f"/api/channels/demo/documents/{document.pk}")
    revoke_api_key(api_key=document.created_by_key, actor=Actor(via="command"))

    events = list(AuditEvent.objects.exclude(action="channel.create").order_by("id"))
    assert [event.action for event in events] == [
        "key.create",
        "document.upload",
        "document.reingest",
        "document.delete",
        "key.revoke",
    ]
    writes = events[1:4]
    for event in writes:
        assert event.actor == f"key {raw[:10]}… (uploader)"
        assert event.via == "rest"
        assert event.channel_slug == "demo"
        assert event.object_id == str(document.pk)
        assert event.client_address == "10.1.2.3"
        assert event.outcome == "ok"
    revoked = AuditEvent.objects.get(action="key.revoke")
    assert revoked.actor == "command line" and "uploader" in revoked.object_repr


def test_refused_authentications_are_recorded(channel):
    """Missing, unknown and revoked keys are recorded as refused, with the
    address they came from, and never with the key itself."""
    Client(REMOTE_ADDR="10.0.0.9").get("/api/channels/demo")
    client_for("qk_" + "x" * 40, "10.0.0.9").get("/api/channels/demo")
    raw = read_key(channel)
    revoke_api_key(api_key=channel.api_keys.get(), actor=COMMAND_LINE)
    client_for(raw, "10.0.0.9").get("/api/channels")
    refused = AuditEvent.objects.filter(action="auth.refused").order_by("id")
    assert [event.detail.split(" (")[0] for event in refused] == [
        "An API key is required.",
        "Unknown API key.",
        "This API key has been revoked.",
    ]
    assert {event.client_address for event in refused} == {"10.0.0.9"}
    assert all(raw not in event.detail + event.actor for event in refused)


def test_failed_authentications_are_throttled_per_address(
    channel, settings, steady_rate_window
):
    """Item 11: after AUTH_FAILURES_PER_MINUTE bad keys from one address, that
    address gets 429 with Retry-After, even with a good key, for the rest of the
    minute; other addresses are unaffected. Past the limit nothing more is
    written but one 'throttled' record."""
    settings.AUTH_FAILURES_PER_MINUTE = 5
    good = read_key(channel)
    attacker = client_for("qk_guess", "10.6.6.6")
    statuses = [attacker.get("/api/channels/demo").status_code for _ in range(40)]
    assert statuses[:5] == [401] * 5
    assert set(statuses[6:]) == {429}
    throttled = attacker.get("/api/channels/demo")
    assert throttled["Retry-After"] == "30"
    assert client_for(good, "10.6.6.6").get("/api/channels/demo").status_code == 429
    assert client_for(good, "10.7.7.7").get("/api/channels/demo").status_code == 200
    assert AuditEvent.objects.filter(action="auth.refused").count() == 6
    assert AuditEvent.objects.filter(action="auth.throttled").count() == 1


def test_failed_token_authentications_are_throttled_and_recorded_like_keys(
    channel, settings, steady_rate_window
):
    """Bad OAuth access tokens count against the address as bad keys do, and
    crossing the limit is recorded once."""
    settings.AUTH_FAILURES_PER_MINUTE = 5
    attacker = client_for("not-a-token-quire-issued", "10.8.8.8")
    statuses = [attacker.get("/api/channels/demo").status_code for _ in range(10)]
    assert statuses[:5] == [401] * 5
    assert set(statuses[6:]) == {429}
    assert AuditEvent.objects.filter(action="auth.refused").count() == 6
    assert AuditEvent.objects.filter(action="auth.throttled").count() == 1


def test_the_channel_list_counts_toward_the_rate_limit(
    channel, settings, steady_rate_window
):
    """Item 11: GET /api/channels is counted like every other request."""
    settings.MCP_RATE_LIMIT_PER_MINUTE = 3
    agent = client_for(read_key(channel))
    statuses = [agent.get("/api/channels").status_code for _ in range(5)]
    assert statuses == [200, 200, 200, 429, 429]


def test_writes_have_an_hourly_quota_per_key(channel, settings):
    """Item 5: past API_WRITES_PER_HOUR a key's writes get 429 (reads go on)."""
    settings.API_WRITES_PER_HOUR = 3
    uploader = client_for(write_key(channel))
    statuses = [upload(uploader, channel, f"n{i}.txt").status_code for i in range(5)]
    assert statuses == [202, 202, 202, 429, 429]
    assert Document.objects.count() == 4  # the fixture's and three uploads
    refused = upload(uploader, channel, "late.txt")
    assert "writes for this hour" in refused.json()["detail"]
    assert uploader.get("/api/channels/demo").status_code == 200
    assert (
        RateLimitWindow.objects.filter(bucket=RateLimitWindow.Bucket.WRITES).get().count
        == 6
    )


def test_repeated_reingest_requests_queue_one_ingestion(
    channel, settings, django_capture_on_commit_callbacks
):
    """Item 5: sixty re-ingest requests in a row queue one task while it is
    queued (or running), not sixty."""
    settings.API_WRITES_PER_HOUR = 1000
    uploader = client_for(write_key(channel))
    document = Document.objects.get(title="Handbook")
    url = f"/api/channels/demo/documents/{document.pk}/reingest"

    def reingest():
        with django_capture_on_commit_callbacks(execute=True):
            assert uploader.post(url).status_code == 202

    for _ in range(60):
        reingest()
    tasks = DBTaskResult.objects.filter(task_path=INGEST_TASK_PATH)
    assert tasks.count() == 1
    tasks.update(status=TaskResultStatus.RUNNING)
    reingest()
    assert tasks.count() == 1
    tasks.update(status=TaskResultStatus.SUCCESSFUL)
    reingest()
    assert DBTaskResult.objects.filter(task_path=INGEST_TASK_PATH).count() == 2


def test_old_audit_events_are_pruned_after_the_retention(channel, settings):
    """AUDIT_RETENTION_DAYS bounds the trail; 0 keeps it forever."""
    settings.AUDIT_RETENTION_DAYS = 30
    AuditEvent.objects.all().delete()  # the channel's own channel.create
    read_key(channel)
    AuditEvent.objects.update(at=timezone.now() - datetime.timedelta(days=31))
    read_key(channel)
    assert prune_audit() == 1
    assert AuditEvent.objects.count() == 1
    settings.AUDIT_RETENTION_DAYS = 0
    AuditEvent.objects.update(at=timezone.now() - datetime.timedelta(days=3650))
    assert prune_audit() == 0
