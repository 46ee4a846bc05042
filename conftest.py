"""Project-wide test fixtures. Tests run on real PostgreSQL with pgvector.

Concurrent test runs on one machine: set QUIRE_TEST_DATABASE to a name of your own.
"""

import hashlib

import numpy as np
import pytest

from documents.tests.chat_model import start_chat_model_server

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


@pytest.fixture(autouse=True)
def _admission_pool_off(settings):
    """The admission's async pool (documents.access.pool) has connections of
    its own, which can't see a test's uncommitted rows: off unless a test
    (transactional) turns it on."""
    settings.MCP_ADMISSION_POOL_SIZE = 0


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
    """Factory for a real local OpenAI-compatible /chat/completions endpoint
    (documents.tests.chat_model).

    `chat_model_server(reply)` starts one whose answer text is `reply(labels)`,
    where labels are the `[Document <id>, Page <n>]` labels of the last user
    message; it returns (base_url, requests), each request recorded as
    {"path", "headers", "body"}. Servers stop when the test ends.
    """
    servers = []

    def start(reply):
        server, base_url, requests = start_chat_model_server(reply)
        servers.append(server)
        return base_url, requests

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()
