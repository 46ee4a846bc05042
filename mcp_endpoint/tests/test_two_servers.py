"""Several servers, one database: two Quire web processes, two ingestion
workers and a streaming replica on this machine. A real MCP client spreads its
calls over both servers and fails over to the other one on a connection error
(as a client behind a load balancer would); one server is killed and restarted
mid-run; uploads land through either. Nothing may fail, be lost or be ingested
twice."""

import asyncio
import itertools
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import httpx
import httpx2
import pytest
from django.tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from documents.access import COMMAND_LINE
from documents.models import Chunk, Document
from documents.services.channels import create_channel
from documents.services.keys import create_api_key
from documents.tests.corpus import add_document
from documents.tests.replica import standby as standby  # the fixture
from mcp_endpoint.tests import live

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

UPLOADS = 8
CALLS_PER_ROUND = 2
CHUNKS = Chunk._meta.db_table


class FailoverClient:
    """Calls go to the servers in turn; a connection error on one is retried
    on the other, and a call fails only when both do."""

    def __init__(self, urls: list[str], slug: str, key: str):
        self.urls = urls
        self.slug = slug
        self.key = key
        self.turn = itertools.count()
        self.failures: list[str] = []
        self.served = Counter()

    def _order(self) -> list[int]:
        first = next(self.turn) % len(self.urls)
        return [first, 1 - first]

    async def call_tool(self, name: str, arguments: dict) -> dict:
        for index in self._order():
            url = f"{self.urls[index]}/mcp/{self.slug}"
            http = httpx2.AsyncClient(
                headers={"Authorization": f"Bearer {self.key}"}, timeout=120
            )
            try:
                async with (
                    http,
                    Client(
                        streamable_http_client(url, http_client=http),
                        mode="2026-07-28",
                    ) as client,
                ):
                    result = await client.call_tool(name, arguments)
            except Exception as exc:  # noqa: BLE001 (any transport failure)
                if _connection_error(exc):
                    continue
                raise
            self.served[index] += 1
            assert not result.is_error, result.content
            return result.structured_content
        self.failures.append(f"{name} {arguments}")
        return {}

    def upload(self, name: str, body: bytes) -> int | None:
        for index in self._order():
            try:
                response = httpx.post(
                    f"{self.urls[index]}/api/channels/{self.slug}/documents",
                    headers={"Authorization": f"Bearer {self.key}"},
                    files={"file": (name, body, "text/markdown")},
                    timeout=60,
                )
            except httpx.TransportError:
                continue
            assert response.status_code in (200, 202), response.text
            self.served[index] += 1
            return response.json()["id"]
        self.failures.append(f"upload {name}")
        return None


def _connection_error(exc: BaseException) -> bool:
    """Whether a connection failure (refused, reset) is anywhere in `exc`,
    which the SDK may wrap in exception groups."""
    if isinstance(exc, httpx2.TransportError | httpx.TransportError | OSError):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return any(_connection_error(inner) for inner in exc.exceptions)
    cause = exc.__cause__ or exc.__context__
    return cause is not None and _connection_error(cause)


def start_worker(env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "manage.py", "ingest_worker", "--no-startup-delay"],
        cwd=live.REPO,
        env={**env, "INGEST_WORKER_NICENESS": "0"},
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )


def test_two_servers_two_workers_and_a_replica_lose_nothing(standby, tmp_path):
    """0 failed calls while one server is killed and restarted, both servers
    served calls, searches ran on the replica, and every uploaded document is
    ready exactly once: one Document per file, one successful ingestion each,
    its chunks stored once."""
    channel = create_channel(slug="fleet", name="Fleet")
    add_document(
        channel,
        title="Pump manual",
        pages=["The pump must be primed before the first start."],
    )
    key = create_api_key(
        actor=COMMAND_LINE, name="fleet", channels=[channel], scopes=["write"]
    ).raw_key
    standby.wait_for_replay()
    env = live.server_environment(tmp_path / "media", live.new_conformance_key())
    env.update(DATABASE_REPLICA_URLS=standby.url(), REPLICA_CHECK_SECONDS="1")
    ports = [live.free_port(), live.free_port()]
    servers: list[subprocess.Popen] = []
    workers = [start_worker(env), start_worker(env)]
    try:
        for port in ports:
            servers.append(live.start_server(env, workers=1, port=port)[0])
        client = FailoverClient(
            [f"http://127.0.0.1:{port}" for port in ports], channel.slug, key
        )
        scans_before = standby.table_scans(CHUNKS)
        uploaded: dict[str, int | None] = {}

        async def run() -> None:
            for number in range(UPLOADS):
                if number == 3:
                    os.killpg(servers[0].pid, signal.SIGKILL)
                    servers[0].wait()
                if number == 5:
                    servers[0] = live.start_server(env, workers=1, port=ports[0])[0]
                name = f"valve-{number}.md"
                uploaded[name] = client.upload(
                    name,
                    f"# Valve {number}\n\nValve {number} opens clockwise.".encode(),
                )
                for _ in range(CALLS_PER_ROUND):
                    await client.call_tool(
                        "retrieve_text_chunks", {"query": "pump primed"}
                    )
                    await client.call_tool("list_documents", {})

        asyncio.run(run())
        assert client.failures == []
        assert set(client.served) == {0, 1}, client.served

        ids = set(uploaded.values())
        assert None not in ids and len(ids) == UPLOADS
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            statuses = set(
                Document.objects.filter(pk__in=ids).values_list("status", flat=True)
            )
            if statuses == {Document.Status.READY}:
                break
            assert Document.Status.FAILED not in statuses
            time.sleep(1)
        documents = Document.objects.filter(channel=channel).exclude(
            title="Pump manual"
        )
        assert sorted(documents.values_list("original_filename", flat=True)) == sorted(
            uploaded
        )
        assert set(documents.values_list("status", flat=True)) == {"ready"}
        ingestions = Counter(
            result.args_kwargs["args"][0]
            for result in DBTaskResult.objects.filter(
                task_path__endswith="ingest_document_task",
                status=TaskResultStatus.SUCCESSFUL,
            )
        )
        assert {pk: ingestions[pk] for pk in ids} == dict.fromkeys(ids, 1)
        for document in documents:
            assert document.revision == 1
            assert Chunk.objects.filter(document=document).count() == (
                document.chunk_count
            )

        deadline = time.monotonic() + 30
        while standby.table_scans(CHUNKS) <= scans_before:
            assert time.monotonic() < deadline, "no search reached the replica"
            time.sleep(0.5)
    finally:
        for process in servers + workers:
            live.stop_server(process)
