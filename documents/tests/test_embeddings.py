"""The embedder contract, passed by the real ONNX embedder and the test fake."""

import numpy as np
import pytest

from documents.ingestion import embeddings
from documents.models import EMBEDDING_DIMENSIONS


@pytest.fixture(params=["onnx-minilm", "fake"])
def embedder(request):
    if request.param == "fake":
        return request.getfixturevalue("fake_embedder")
    return embeddings.get_embedder()


def _cosine(a, b) -> float:
    return float(np.dot(a, b))


def test_vectors_are_unit_length_with_the_column_dimensions(embedder):
    """Documents and queries come back as unit vectors of the Chunk column's size."""
    vectors = embedder.embed_documents(["A short sentence.", "Another, longer one."])
    vectors.append(embedder.embed_query("a question?"))
    assert embedder.dimensions == EMBEDDING_DIMENSIONS
    assert embedder.model_name
    for vector in vectors:
        assert len(vector) == EMBEDDING_DIMENSIONS
        assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-4)


def test_similar_sentences_score_higher_than_unrelated_ones(embedder):
    """A query is closer to a passage on its topic than to unrelated ones."""
    query = embedder.embed_query("How do owls hunt at night?")
    related, unrelated, other = embedder.embed_documents(
        [
            "Owls hunt small mammals at night, guided by their hearing.",
            "The stock market closed higher on Tuesday after bank earnings.",
            "Bake the bread for forty minutes until the crust is golden.",
        ]
    )
    assert _cosine(query, related) > _cosine(query, unrelated)
    assert _cosine(query, related) > _cosine(query, other)


def test_batches_keep_input_order(embedder):
    """embed_documents returns one vector per text, in the order given, equal to
    embedding each text alone."""
    texts = [f"Sentence {i} " + "word " * (i * 7 % 23) for i in range(40)]
    batch = embedder.embed_documents(texts)
    assert len(batch) == len(texts)
    for text, vector in zip(texts[::7], batch[::7], strict=True):
        alone = embedder.embed_query(text)
        assert _cosine(alone, vector) == pytest.approx(1.0, abs=1e-3)


def test_no_texts_no_vectors(embedder):
    """An empty batch costs nothing and returns nothing."""
    assert embedder.embed_documents([]) == []


def test_concurrent_queries_are_embedded_together_and_each_gets_its_own():
    """Queries from many threads at once are run as shared batches, and each
    caller gets the vector of its own text (as if embedded alone)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    real = embeddings.get_embedder()
    runs: list[int] = []
    started = threading.Event()
    release = threading.Event()

    def encode(texts):
        runs.append(len(texts))
        if len(runs) == 1:  # hold the first run so the others queue up
            started.set()
            release.wait(5)
        return real._encode(texts)

    batcher = embeddings.QueryBatcher(encode, max_batch=32)
    texts = [f"question {i} about " + "owls " * i for i in range(12)]
    with ThreadPoolExecutor(max_workers=12) as pool:
        first = pool.submit(batcher.embed, texts[0])
        assert started.wait(5)
        rest = [pool.submit(batcher.embed, text) for text in texts[1:]]
        while batcher._waiting.qsize() < len(rest):
            threading.Event().wait(0.01)
        release.set()
        vectors = [first.result(5)] + [future.result(5) for future in rest]
    assert runs == [1, len(texts) - 1]
    for text, vector in zip(texts, vectors, strict=True):
        alone = real._encode([text])[0]
        assert _cosine(alone, vector) == pytest.approx(1.0, abs=1e-4)


def test_a_failing_batch_fails_every_waiting_query_and_the_next_one_works():
    """An error in a batch reaches each caller in it; the worker keeps serving."""
    calls = []

    def encode(texts):
        calls.append(texts)
        if len(calls) == 1:
            raise RuntimeError("model crashed")
        return np.ones((len(texts), 3)) / np.sqrt(3)

    batcher = embeddings.QueryBatcher(encode)
    with pytest.raises(RuntimeError, match="model crashed"):
        batcher.embed("first")
    assert batcher.embed("second") == pytest.approx([1 / np.sqrt(3)] * 3)


def test_the_model_is_built_once_when_first_requests_arrive_together(monkeypatch):
    """Concurrent first calls wait for one build instead of each loading it."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    builds = []

    class Slow:
        def __init__(self, **kwargs):
            builds.append(kwargs)
            threading.Event().wait(0.2)

    monkeypatch.setattr(embeddings, "OnnxMiniLMEmbedder", Slow)
    embeddings._build_embedder.cache_clear()
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            built = list(pool.map(lambda _: embeddings.get_embedder(), range(8)))
    finally:
        embeddings._build_embedder.cache_clear()
    assert len(builds) == 1
    assert all(item is built[0] for item in built)
