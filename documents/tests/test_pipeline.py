"""The chunk stream: embedding starts after the first few chunks, and the vectors
come back in the order of the chunks."""

from documents.ingestion import pipeline
from documents.ingestion.parsed import ParsedPage


def test_embedding_starts_early_then_goes_in_full_groups(fake_embedder, monkeypatch):
    batches: list[list[str]] = []
    embed = fake_embedder.embed_documents

    def recording(texts):
        batches.append(list(texts))
        return embed(texts)

    monkeypatch.setattr(fake_embedder, "embed_documents", recording)
    stream = pipeline.ChunkStream(chunk_size=40, chunk_overlap=0, group=32)
    # 100 pages of one short paragraph each: one chunk per page.
    for number in range(1, 101):
        stream.add_pages([ParsedPage(number=number, text=f"Paragraph {number}.")])
    vectors = stream.finish()

    sizes = [len(batch) for batch in batches]
    assert sizes[0] == pipeline.FIRST_GROUP
    assert all(size == 32 for size in sizes[1:-1])
    assert sum(sizes) == len(stream.chunks) == 100
    assert vectors == embed([chunk.text for chunk in stream.chunks])
