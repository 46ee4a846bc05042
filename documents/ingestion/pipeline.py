"""Chunks embedded while the reader is still reading.

The reader child hands pages over as it reads them; the embedder (the limit of
ingestion) starts on the first chunks at once, on a worker thread, instead of
waiting for the last page. ONNX Runtime releases the GIL while it runs, so the
reader child, the parent's clean-up and the embedder overlap.
"""

import logging
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor

from documents.ingestion import embeddings
from documents.ingestion.chunking import TextChunk, chunk_pages
from documents.ingestion.context import HeadingTrail, retrieval_text
from documents.ingestion.deadline import Deadline, TooManyChunks
from documents.ingestion.parsed import ParsedPage

logger = logging.getLogger(__name__)

# The first group is small so that the embedder starts after the first pages
# instead of waiting for a whole group (it is the limit of ingestion).
FIRST_GROUP = 8
# Longest wait for the embedder between two looks at the deadline's clock.
WAIT_STEP = 1.0


class EmbeddingFailed(Exception):
    """The embedder raised; the cause is logged."""


class EmbeddingLane:
    """The one thread that embeds the streams' groups, kept from document to
    document: a new thread per document made each small document's embedding
    5-6 ms slower (3 chunks: 64 ms on a fresh thread, 58 on a kept one). A
    stream that stops while its group still runs abandons the thread to that
    group and the next stream gets a new one, so a stopped document never
    makes the next one wait."""

    def __init__(self):
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._owner = os.getpid()

    def submit(self, function, *args) -> tuple[ThreadPoolExecutor, Future]:
        """`function(*args)` queued on the lane's thread; the thread's pool
        comes back with the future, for `abandon`."""
        with self._lock:
            if self._owner != os.getpid():  # a forked process has no thread
                self._pool, self._owner = None, os.getpid()
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="embed"
                )
            return self._pool, self._pool.submit(function, *args)

    def abandon(self, pool: ThreadPoolExecutor) -> None:
        """Leave `pool`'s thread to the group it runs; later groups go to a
        new thread."""
        with self._lock:
            if self._pool is pool:
                self._pool = None
        pool.shutdown(wait=False)


LANE = EmbeddingLane()


class ChunkStream:
    """Chunks pages as they come (`add_pages`) and embeds them in groups of
    `group` chunks on one worker thread; `finish` waits for the vectors. Each
    chunk is embedded with its context (the document's `title`, which may be
    set until the first pages come, and its headings).

    At most `max_chunks` chunks are made: the one past the budget fails the
    document (TooManyChunks) before it or any later chunk is embedded. Past
    the `deadline`, adding pages or waiting for vectors raises DeadlinePassed."""

    def __init__(
        self,
        *,
        chunk_size: int,
        chunk_overlap: int,
        group: int,
        max_chunks: int,
        deadline: Deadline,
        title: str = "",
    ):
        self.title = title
        self.headings = HeadingTrail()
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self.group = max(1, group)
        self.max_chunks = max_chunks
        self.deadline = deadline
        self.chunks: list[TextChunk] = []
        self._pending: list[TextChunk] = []
        self._futures: list[Future] = []
        self._pools: set[ThreadPoolExecutor] = set()
        self.model_name = ""

    def add_pages(self, pages: list[ParsedPage]) -> None:
        self.deadline.check()
        new = chunk_pages(
            pages,
            chunk_size=self.chunk_size,
            chunk_overlap=self.chunk_overlap,
            first_order=len(self.chunks),
            title=self.title,
            headings=self.headings,
        )
        if len(self.chunks) + len(new) > self.max_chunks:
            raise TooManyChunks(self.max_chunks)
        self.chunks.extend(new)
        self._pending.extend(new)
        wanted = self.group if self._futures else min(self.group, FIRST_GROUP)
        if len(self._pending) >= wanted:
            self._submit()

    def _submit(self) -> None:
        texts = [retrieval_text(chunk.context, chunk.text) for chunk in self._pending]
        self._pending = []
        pool, future = LANE.submit(self._embed, texts)
        self._pools.add(pool)
        self._futures.append(future)

    def _embed(self, texts: list[str]) -> list:
        embedder = embeddings.get_embedder()
        self.model_name = embedder.model_name
        return embedder.embed_documents(texts)

    def submit_rest(self) -> None:
        """Send the chunks still waiting to the embedder (the reading is over),
        so that it works while the caller does something else."""
        if self._pending:
            self._submit()

    def finish(self) -> list:
        """The vectors of every chunk, in order. Raises EmbeddingFailed, or
        DeadlinePassed when the vectors are not all there in time."""
        self.submit_rest()
        vectors: list = []
        try:
            for future in self._futures:
                vectors.extend(self._result(future))
        finally:
            self.close()
        return vectors

    def _result(self, future: Future) -> list:
        while True:
            self.deadline.check()
            wait = min(max(self.deadline.left(), 0.0), WAIT_STEP)
            try:
                return future.result(timeout=wait)
            except TimeoutError:
                continue
            except Exception as exc:
                logger.exception("Embedding %d chunks failed", len(self.chunks))
                raise EmbeddingFailed from exc

    def close(self) -> None:
        """Stop embedding: what is queued is dropped, and the group being
        embedded (ONNX can't be interrupted) ends on its own thread without
        being waited for, so a stopped document frees the worker at once."""
        for future in self._futures:
            future.cancel()
        if any(future.running() for future in self._futures):
            for pool in self._pools:
                LANE.abandon(pool)
        self._pools.clear()
