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
def fake_embedder(monkeypatch):
    """Replace the configured embedder with FakeEmbedder for this test."""
    from documents.ingestion import embeddings

    embedder = FakeEmbedder()
    monkeypatch.setattr(embeddings, "get_embedder", lambda: embedder)
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

    from mcp_endpoint import ratelimit

    moment = datetime.datetime(2026, 1, 1, 12, 0, 30, tzinfo=datetime.UTC)
    monkeypatch.setattr(ratelimit, "_now", lambda: moment)
    return moment
