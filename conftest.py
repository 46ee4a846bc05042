"""Project-wide test fixtures. Tests run on real PostgreSQL with pgvector.

Concurrent test runs on one machine: set QUIRE_TEST_DATABASE to a name of your own.
"""

import hashlib

import numpy as np
import pytest

SHARED_DATA = (
    __import__("pathlib").Path(__file__).resolve().parent.parent / "shared" / "data"
)


@pytest.fixture(autouse=True)
def _media_in_tmp(settings, tmp_path):
    """Every test writes files to its own folder through the default storage."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": tmp_path / "media"},
        },
    }


@pytest.fixture
def shared_data():
    if not SHARED_DATA.exists():
        pytest.skip("../shared/data is not present")
    return SHARED_DATA


FAKE_EMBEDDER_MIN_SCORE = 0.2


class FakeEmbedder:
    """Deterministic bag-of-words embedder for tests where embedding quality is not
    what is tested: texts sharing words get similar unit vectors."""

    model_name = "fake-bow-384"
    dimensions = 384

    def _vector(self, text: str) -> list[float]:
        vector = np.zeros(self.dimensions, dtype=np.float32)
        for word in text.lower().split():
            digest = hashlib.blake2b(
                word.strip(".,;:!?()[]\"'").encode(), digest_size=4
            )
            vector[int.from_bytes(digest.digest(), "little") % self.dimensions] += 1.0
        norm = np.linalg.norm(vector)
        if norm == 0:
            vector[0] = 1.0
            norm = 1.0
        return (vector / norm).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


@pytest.fixture
def fake_embedder(monkeypatch, settings):
    """Replace the configured embedder with FakeEmbedder for this test.

    ANSWER_MIN_SCORE is calibrated for the real embedder's similarities; bag of
    words similarities run lower, so answers use a threshold fitted to them."""
    from documents.ingestion import embeddings

    embedder = FakeEmbedder()
    monkeypatch.setattr(embeddings, "get_embedder", lambda: embedder)
    settings.ANSWER_MIN_SCORE = FAKE_EMBEDDER_MIN_SCORE
    return embedder


@pytest.fixture
def make_channel(db):
    """Factory: make_channel(slug, fields=[{"name": ..., "type": ...}], **options)."""
    from documents.services.channels import create_channel

    def make(slug: str = "handbook", name: str | None = None, **kwargs):
        return create_channel(slug=slug, name=name or slug.title(), **kwargs)

    return make


@pytest.fixture
def steady_rate_window(monkeypatch):
    """Pin the rate limiter's clock to the middle of one minute, so a test's
    requests can't straddle two fixed windows."""
    import datetime

    from documents.access import windows

    moment = datetime.datetime(2026, 1, 1, 12, 0, 30, tzinfo=datetime.UTC)
    monkeypatch.setattr(windows, "_now", lambda: moment)
    return moment


@pytest.fixture
def chat_model_server():
    """Factory for a real local OpenAI-compatible /chat/completions endpoint.

    `chat_model_server(reply)` starts one whose answer text is `reply(labels)`,
    where labels are the `[Document <id>, Page <n>]` labels of the last user
    message; it returns (base_url, requests), each request recorded as
    {"path", "headers", "body"}. Servers stop when the test ends.
    """
    import json
    import re
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    servers = []

    def start(reply):
        requests: list[dict] = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server API)
                length = int(self.headers["Content-Length"])
                body = json.loads(self.rfile.read(length))
                requests.append(
                    {
                        "path": self.path,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "body": body,
                    }
                )
                labels = re.findall(
                    r"\[Document \d+, Page \d+\]", body["messages"][-1]["content"]
                )
                message = {"role": "assistant", "content": reply(labels)}
                payload = json.dumps(
                    {
                        "id": "chatcmpl-test",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": [
                            {"index": 0, "message": message, "finish_reason": "stop"}
                        ],
                        "usage": {
                            "prompt_tokens": 1,
                            "completion_tokens": 1,
                            "total_tokens": 2,
                        },
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_port}/v1", requests

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()
