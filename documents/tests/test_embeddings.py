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
