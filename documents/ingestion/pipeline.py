"""Chunks embedded while the reader is still reading.

The reader child hands pages over as it reads them; the embedder (the limit of
ingestion) starts on the first chunks at once, on a worker thread, instead of
waiting for the last page. ONNX Runtime releases the GIL while it runs, so the
reader child, the parent's clean-up and the embedder overlap.
"""

import logging
from concurrent.futures import Future, ThreadPoolExecutor

from documents.ingestion import embeddings
from documents.ingestion.chunking import TextChunk, chunk_pages
from documents.ingestion.parsed import ParsedPage

logger = logging.getLogger(__name__)

# The first group is small so that the embedder starts after the first pages
# instead of waiting for a whole group (it is the limit of ingestion).
FIRST_GROUP = 8


class EmbeddingFailed(Exception):
    """The embedder raised; the cause is logged."""


class ChunkStream:
    """Chunks pages as they come (`add_pages`) and embeds them in groups of
    `group` chunks on one worker thread; `finish` waits for the vectors."""

    def __init__(self, *, chunk_size: int, chunk_overlap: int, group: int):
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self.group = max(1, group)
        self.chunks: list[TextChunk] = []
        self._pending: list[TextChunk] = []
        self._futures: list[Future] = []
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embed")
        self.model_name = ""

    def add_pages(self, pages: list[ParsedPage]) -> None:
        new = chunk_pages(
            pages,
            chunk_size=self.chunk_size,
            chunk_overlap=self.chunk_overlap,
            first_order=len(self.chunks),
        )
        self.chunks.extend(new)
        self._pending.extend(new)
        wanted = self.group if self._futures else min(self.group, FIRST_GROUP)
        if len(self._pending) >= wanted:
            self._submit()

    def _submit(self) -> None:
        texts = [chunk.text for chunk in self._pending]
        self._pending = []
        self._futures.append(self._pool.submit(self._embed, texts))

    def _embed(self, texts: list[str]) -> list:
        embedder = embeddings.get_embedder()
        self.model_name = embedder.model_name
        return embedder.embed_documents(texts)

    def finish(self) -> list:
        """The vectors of every chunk, in order. Raises EmbeddingFailed."""
        if self._pending:
            self._submit()
        vectors: list = []
        try:
            for future in self._futures:
                vectors.extend(future.result())
        except Exception as exc:
            logger.exception("Embedding %d chunks failed", len(self.chunks))
            raise EmbeddingFailed from exc
        finally:
            self.close()
        return vectors

    def close(self) -> None:
        """Stop embedding (what is queued is dropped) and end the thread."""
        for future in self._futures:
            future.cancel()
        self._pool.shutdown(wait=True)
