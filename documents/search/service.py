"""retrieve_chunks: the channel's retriever (keyword, vector or both, fused)."""

import json
import logging
from concurrent.futures import Future

from django.conf import settings

from documents.filters import compile_filter
from documents.ingestion import embeddings
from documents.models import Channel, Document
from documents.regions import PAGES_OF_CHUNKS_SQL, add_passage_regions, page_sources
from documents.replicas import read_connection, replica_read
from documents.results import RetrievedChunk
from documents.search.fusion import reciprocal_rank_fusion
from documents.search.legs import (
    Leg,
    Preload,
    Scope,
    keyword_steps,
    run_legs,
    vector_steps,
)
from documents.search.rows import ROW_COLUMNS, ROW_SOURCE
from documents.telemetry import tracing

logger = logging.getLogger(__name__)
# Each leg's best `limit` + this many chunks come with their rows. On SciFact
# (RRF k 20, limit 10) every fused result stood within rank 27 of one leg, 17 of
# 300 queries' results past rank 20; any other is loaded on its own after.
PRELOAD_MARGIN = 20


@replica_read
def retrieve_chunks(
    channel: Channel,
    query: str,
    *,
    document_ids: list[int] | None = None,
    metadata_filter: dict | None = None,
    limit: int | None = None,
) -> list[RetrievedChunk]:
    """The best chunks of the channel's ready documents for `query`, best first.

    `document_ids` restricts the search to those documents, and then
    `metadata_filter` is ignored; otherwise the filter (FilterError when invalid)
    restricts it. `limit` defaults to the channel's retriever_top_k and is capped
    at settings.MCP_MAX_RESULTS. Legs and candidate counts follow the channel.
    """
    ranked, found = _ranked(channel, query, document_ids, metadata_filter, limit)
    chunks, _ = _load(channel, ranked, found)
    return chunks


def _ranked(
    channel: Channel,
    query: str,
    document_ids: list[int] | None,
    metadata_filter: dict | None,
    limit: int | None,
) -> tuple[list[tuple[int, float]], dict[int, tuple]]:
    """(chunk id, fused score) of the best chunks, best first (retrieve_chunks),
    and the rows (documents.search.rows) read with the legs, by chunk id."""
    limit = limit or channel.retriever_top_k
    limit = max(1, min(int(limit), settings.MCP_MAX_RESULTS))
    mode = channel.retriever_mode
    # PostgreSQL text can't hold NUL; a query carrying one would fail the leg.
    query = (query or "").replace("\x00", " ").strip()
    if query and mode in (Channel.RetrieverMode.VECTOR, Channel.RetrieverMode.HYBRID):
        # The slowest step, started first: it runs while the rest is prepared
        # and the keyword leg runs in PostgreSQL (the two don't depend on each
        # other, so a hybrid search waits for the longer, not their sum).
        embedder = embeddings.get_embedder()
        vector = submit_query_embedding(embedder, query)
    documents = Document.objects.for_channel(channel).ready()
    if document_ids:
        documents = documents.filter(id__in=list(document_ids))
        restricted = True
    else:
        condition = compile_filter(channel, metadata_filter)
        documents = documents.filter(condition)
        restricted = bool(condition)
    if not query:
        return [], {}
    candidates = max(channel.retriever_candidates, limit)
    scope = Scope(channel, documents, restricted)
    preload = Preload(channel.pk, limit + PRELOAD_MARGIN)

    def keyword() -> Leg:
        span = tracing.open_span("search keyword", **{"quire.candidates": candidates})
        try:
            return (yield from keyword_steps(scope, query, candidates, preload))
        finally:
            if span is not None:
                span.end()

    def nearest() -> Leg:
        query_vector = vector.result()
        span = tracing.open_span("search vector", **{"quire.candidates": candidates})
        try:
            strategy, ranking = yield from vector_steps(
                scope, query_vector, embedder.model_name, candidates, preload
            )
            if span is not None:
                span.set_attribute("quire.vector.strategy", strategy)
        finally:
            if span is not None:
                span.end()
        logger.debug("vector leg: %s over ~%d chunks", strategy, scope.size)
        return ranking

    # Both legs' statements travel together: the keyword leg runs in
    # PostgreSQL while the query is embedded, and one round trip reads both.
    starts = []
    if mode in (Channel.RetrieverMode.KEYWORD, Channel.RetrieverMode.HYBRID):
        starts.append(keyword)
    if mode in (Channel.RetrieverMode.VECTOR, Channel.RetrieverMode.HYBRID):
        starts.append(nearest)
    rankings: list[list[tuple[int, float]]] = run_legs(*starts)
    if len(rankings) == 1:
        ranked = rankings[0][:limit]
    else:
        fused = reciprocal_rank_fusion(
            [[chunk_id for chunk_id, _ in ranking] for ranking in rankings],
            k=channel.retriever_rrf_k,
        )
        ranked = fused[:limit]
    return ranked, preload.found


def submit_query_embedding(embedder: embeddings.Embedder, query: str) -> Future:
    """A future of the query's vector (embeddings.submit_query), timed as a
    span of the request's trace."""
    future = embeddings.submit_query(embedder, query)
    tracing.span_until_done(
        future, "embedding", **{"gen_ai.operation.name": "embeddings"}
    )
    return future


@replica_read
def retrieve_passages(
    channel: Channel,
    query: str,
    *,
    document_ids: list[int] | None = None,
    metadata_filter: dict | None = None,
    limit: int | None = None,
) -> list[RetrievedChunk]:
    """retrieve_chunks (same options), each chunk with the regions of its lines
    on its page: the passages retrieve_text_chunks and the REST search return.
    The pages come with the chunks, in the same round trip."""
    ranked, found = _ranked(channel, query, document_ids, metadata_filter, limit)
    chunks, pages = _load(channel, ranked, found, with_pages=True)
    add_passage_regions(chunks, pages)
    return chunks


def _load(
    channel: Channel,
    ranked: list[tuple[int, float]],
    found: dict[int, tuple],
    *,
    with_pages: bool = False,
) -> tuple[list[RetrievedChunk], dict]:
    """The ranked chunks with what a caller needs to cite them, and (with_pages)
    their pages with line positions (documents.regions.page_sources).

    The rows read with the legs (`found`) need no statement; the others are
    read in one, with the pages when asked for. Otherwise the pages are read
    only when one of the chunks' pages has line positions.

    Plain SQL rather than the ORM: on this path compiling the query (a join and
    the channel's shown fields) cost ten times running it."""
    if not ranked:
        return [], {}
    ids = [chunk_id for chunk_id, _ in ranked]
    by_id = {chunk_id: found[chunk_id] for chunk_id in ids if chunk_id in found}
    missing = [chunk_id for chunk_id in ids if chunk_id not in by_id]
    pages: dict = {}
    if missing:
        with read_connection().cursor() as cursor:
            if with_pages:
                # One message, two results: the chunks, then their pages.
                statement = f"{_LOAD_SQL}; {PAGES_OF_CHUNKS_SQL}"
                cursor.execute(statement, [channel.pk, missing, ids])
            else:
                cursor.execute(_LOAD_SQL, [channel.pk, missing])
            by_id.update((row[0], row[1:]) for row in cursor.fetchall())
            if with_pages:
                cursor.nextset()
                pages = page_sources(cursor.fetchall())
    elif with_pages and any(row[-1] for row in by_id.values()):
        with read_connection().cursor() as cursor:
            cursor.execute(PAGES_OF_CHUNKS_SQL, [ids])
            pages = page_sources(cursor.fetchall())
    results = []
    for chunk_id, score in ranked:
        row = by_id.get(chunk_id)
        if row is None:  # deleted since it was ranked
            continue
        document_id, title, filename, metadata, page_number, text = row[:6]
        revision, shown = row[6:8]
        metadata = json.loads(metadata) if metadata else {}
        if shown:
            metadata = {name: metadata[name] for name in shown if name in metadata}
        # Built from trusted rows without validation (model_construct): this
        # runs for every passage of every search.
        results.append(
            RetrievedChunk.model_construct(
                chunk_id=chunk_id,
                document_id=document_id,
                document_title=title or filename,
                page_number=page_number,
                text=text,
                score=float(score),
                metadata=metadata,
                regions=[],
                revision=revision,
            )
        )
    return results, pages


_LOAD_SQL = f"SELECT c.id, {ROW_COLUMNS} FROM {ROW_SOURCE} WHERE c.id = ANY(%s)"
