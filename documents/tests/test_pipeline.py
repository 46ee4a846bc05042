"""The chunk stream: embedding starts after the first few chunks, the vectors
come back in the order of the chunks, and the document's chunk budget and
deadline hold (on a clock the test controls)."""

import threading

import pytest

from documents.ingestion import pipeline
from documents.ingestion.deadline import Deadline, DeadlinePassed, TooManyChunks
from documents.ingestion.parsed import ParsedPage


class Clock:
    """A clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _stream(*, max_chunks: int = 1000, deadline: Deadline | None = None):
    return pipeline.ChunkStream(
        chunk_size=40,
        chunk_overlap=0,
        group=32,
        max_chunks=max_chunks,
        deadline=deadline or Deadline(60.0, clock=Clock()),
    )


def test_embedding_starts_early_then_goes_in_full_groups(fake_embedder, monkeypatch):
    batches: list[list[str]] = []
    embed = fake_embedder.embed_documents

    def recording(texts):
        batches.append(list(texts))
        return embed(texts)

    monkeypatch.setattr(fake_embedder, "embed_documents", recording)
    stream = _stream()
    # 100 pages of one short paragraph each: one chunk per page.
    for number in range(1, 101):
        stream.add_pages([ParsedPage(number=number, text=f"Paragraph {number}.")])
    vectors = stream.finish()

    sizes = [len(batch) for batch in batches]
    assert sizes[0] == pipeline.FIRST_GROUP
    assert all(size == 32 for size in sizes[1:-1])
    assert sum(sizes) == len(stream.chunks) == 100
    assert vectors == embed([chunk.text for chunk in stream.chunks])


def test_the_page_that_passes_the_chunk_budget_is_not_embedded(
    fake_embedder, monkeypatch
):
    """The budget is checked before chunks go to the embedder: the pages that
    fit are embedded, the one that would pass the budget fails the document."""
    embedded: list[str] = []
    embed = fake_embedder.embed_documents
    monkeypatch.setattr(
        fake_embedder,
        "embed_documents",
        lambda texts: embedded.extend(texts) or embed(texts),
    )
    stream = _stream(max_chunks=10)
    stream.add_pages([ParsedPage(number=n, text=f"Page {n}.") for n in range(1, 9)])
    with pytest.raises(TooManyChunks) as excinfo:
        stream.add_pages(
            [ParsedPage(number=n, text=f"Page {n}.") for n in range(9, 14)]
        )
    stream.close()
    assert "more than 10 passages" in excinfo.value.reason
    assert len(stream.chunks) == 8
    assert all(text.startswith("Page") for text in embedded)
    assert len(embedded) <= 8


def test_waiting_for_an_embedder_that_never_ends_stops_at_the_deadline(
    fake_embedder, monkeypatch
):
    """An embedding group that takes longer than the deadline (here: forever,
    while the clock moves past the deadline) ends the wait with DeadlinePassed
    instead of holding the worker; the stuck group is not waited for."""
    clock = Clock()
    release = threading.Event()

    def endless(texts):
        clock.now = 61.0
        release.wait()
        return []

    monkeypatch.setattr(fake_embedder, "embed_documents", endless)
    stream = _stream(deadline=Deadline(60.0, clock=clock))
    try:
        stream.add_pages([ParsedPage(number=1, text="One page.")])
        with pytest.raises(DeadlinePassed) as excinfo:
            stream.finish()
    finally:
        release.set()
    assert "longer than 60 seconds" in excinfo.value.reason


def test_pages_after_the_deadline_are_not_chunked(fake_embedder):
    clock = Clock()
    stream = _stream(deadline=Deadline(5.0, clock=clock))
    stream.add_pages([ParsedPage(number=1, text="In time.")])
    clock.now = 5.0
    with pytest.raises(DeadlinePassed):
        stream.add_pages([ParsedPage(number=2, text="Too late.")])
    stream.close()
    assert [chunk.text for chunk in stream.chunks] == ["In time."]
