"""Vectors of the sentences answers score: in memory, in SentenceVector rows
(one per sentence of a page, deleted with the page), or embedded now and kept.

prepare_document fills the rows for a whole document after its ingestion
(documents.tasks.prepare_answers_task), so answers embed only the question.
"""

import contextlib

import numpy as np
from django.db import IntegrityError, transaction

from documents.generation.memo import LRU, text_key
from documents.generation.sentences import Kind, Sentence, page_sentences
from documents.ingestion import embeddings
from documents.ingestion.context import marked_headings
from documents.models import Page, SentenceVector

# A long sentence's meaning is in its opening; embedding cost grows with length.
EMBED_CHARS = 240

_vectors_of = LRU(20000)


def vectors_for(embedder, items: list[tuple[int | None, str]]) -> list[np.ndarray]:
    """Unit vectors of (page id, text) pairs: from memory, else from the page's
    SentenceVector rows, else embedded now and kept (in memory, and as rows for
    pages, so every process finds them)."""
    model = embedder.model_name
    digests = [text_key(text) for _, text in items]
    vectors: list[np.ndarray | None] = [
        _vectors_of.get((model, digest)) for digest in digests
    ]
    wanted = {
        (page_id, digest)
        for (page_id, _), digest, vector in zip(items, digests, vectors, strict=True)
        if vector is None and page_id is not None
    }
    if wanted:
        rows = SentenceVector.objects.filter(
            embedding_model=model,
            page_id__in={page_id for page_id, _ in wanted},
            digest__in={digest for _, digest in wanted},
        ).values_list("page_id", "digest", "vector")
        stored = {
            (page_id, digest): np.frombuffer(bytes(vector), dtype=np.float16).astype(
                np.float32
            )
            for page_id, digest, vector in rows
            if (page_id, digest) in wanted
        }
        for index, ((page_id, _), digest) in enumerate(
            zip(items, digests, strict=True)
        ):
            vector = stored.get((page_id, digest))
            if vector is not None and vectors[index] is None:
                vectors[index] = vector
                _vectors_of.put((model, digest), vector)
    missing = [i for i, vector in enumerate(vectors) if vector is None]
    if missing:
        fresh = embedder.embed_documents([items[i][1] for i in missing])
        rows = {}
        for i, vector in zip(missing, fresh, strict=True):
            vector = np.asarray(vector, dtype=np.float16).astype(np.float32)
            vectors[i] = vector
            _vectors_of.put((model, digests[i]), vector)
            page_id = items[i][0]
            if page_id is not None:
                rows[(page_id, digests[i])] = SentenceVector(
                    page_id=page_id,
                    digest=digests[i],
                    embedding_model=model,
                    vector=vector.astype(np.float16).tobytes(),
                )
        # A page deleted meanwhile, or a twin request, makes a row fail: skip it.
        with contextlib.suppress(IntegrityError), transaction.atomic():
            SentenceVector.objects.bulk_create(rows.values(), ignore_conflicts=True)
    return vectors  # type: ignore[return-value]


def embedded_text(unit: Sentence) -> str:
    """What the embedder sees of a unit: a long sentence's meaning is in its
    opening, and embedding cost grows with length."""
    return unit.text[:EMBED_CHARS]


def prepare_document(document_id: int, *, batch: int = 256) -> int:
    """Embed and keep every sentence and heading of a document's pages that has
    no vector yet, so that answers never wait for them; returns how many."""
    embedder = embeddings.get_embedder()
    model = embedder.model_name
    existing = set(
        SentenceVector.objects.filter(
            page__document_id=document_id, embedding_model=model
        ).values_list("page_id", "digest")
    )
    pages = Page.objects.filter(document_id=document_id, has_text=True)
    todo: dict[tuple[int, str], str] = {}
    rows = pages.values_list("id", "text", "lines")
    for page_id, text, lines in rows.iterator():
        for unit in page_sentences(text or "", marked_headings(lines)):
            if unit.quotable or unit.kind in (Kind.HEADING, Kind.QUESTION):
                embedded = embedded_text(unit)
                key = (page_id, text_key(embedded))
                if key not in existing:
                    todo[key] = embedded
    keys = list(todo)
    for start in range(0, len(keys), batch):
        part = keys[start : start + batch]
        fresh = embedder.embed_documents([todo[key] for key in part])
        rows = [
            SentenceVector(
                page_id=page_id,
                digest=digest,
                embedding_model=model,
                vector=np.asarray(vector, dtype=np.float16).tobytes(),
            )
            for (page_id, digest), vector in zip(part, fresh, strict=True)
        ]
        with contextlib.suppress(IntegrityError), transaction.atomic():
            SentenceVector.objects.bulk_create(rows, ignore_conflicts=True)
    return len(keys)
