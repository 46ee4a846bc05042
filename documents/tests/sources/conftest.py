"""Fixtures of the source and sync tests: moto's S3 server and a declared
store with a fresh bucket, and a small website on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from http.server import ThreadingHTTPServer

import boto3
import pytest

from documents.tests.sources.servers import (
    RecordingMotoServer,
    Site,
    free_port,
    handler_for,
    serve,
)


@pytest.fixture(scope="session")
def moto_server() -> Iterator[RecordingMotoServer]:
    server = RecordingMotoServer(
        ip_address="127.0.0.1", port=free_port(), verbose=False
    )
    server.start()
    yield server
    server.stop()


@pytest.fixture
def endpoint(moto_server) -> Iterator[str]:
    host, port = moto_server.get_host_and_port()
    yield f"http://{host}:{port}"
    moto_server.before = None


@pytest.fixture
def store(endpoint, settings, monkeypatch, request) -> tuple[str, object]:
    """A declared store named ``archive`` and a fresh bucket in it; the keys
    live in the variables the store names."""
    monkeypatch.setenv("ARCHIVE_KEY_ID", "testing")
    monkeypatch.setenv("ARCHIVE_SECRET", "testing")
    settings.SOURCE_S3_STORES = {
        "archive": {
            "endpoint_url": endpoint,
            "region": "us-east-1",
            "access_key_env": "ARCHIVE_KEY_ID",
            "secret_key_env": "ARCHIVE_SECRET",
            "session_token_env": "",
            "addressing_style": "path",
            "buckets": [],
            "timeout": 10.0,
        }
    }
    bucket = request.node.name.replace("_", "-")[:60].strip("-").lower()
    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    client.create_bucket(Bucket=bucket)
    return bucket, client


@pytest.fixture
def site() -> Iterator[tuple[Site, str]]:
    state = Site()
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(state))
    serve(server)
    yield state, f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
