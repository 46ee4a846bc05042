"""retrieve_chunks: the channel's retriever (keyword, vector or both, fused)."""

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction

from documents.filters import compile_filter
from documents.ingestion import embeddings
from documents.models import Channel, Chunk, Document
from documents.search.fusion import reciprocal_rank_fusion
from documents.search.legs import Scope, keyword_leg, vector_leg

# Query embeddings are computed here while the keyword leg runs in PostgreSQL:
# the two don't depend on each other, so a hybrid search waits for the longer
# of them, not their sum. (The ONNX embedder batches what arrives together.)
_embedding_threads = ThreadPoolExecutor(thread_name_prefix="embed-query")


@dataclass
class RetrievedChunk:
    """One retrieved passage and what a caller needs to cite it."""

    chunk_id: int
    document_id: int
    document_title: str
    page_number: int
    text: str
    score: float
    metadata: dict = field(default_factory=dict)


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
    limit = limit or channel.retriever_top_k
    limit = max(1, min(int(limit), settings.MCP_MAX_RESULTS))
    documents = Document.objects.for_channel(channel).ready()
    if document_ids:
        documents = documents.filter(id__in=list(document_ids))
        restricted = True
    else:
        condition = compile_filter(channel, metadata_filter)
        documents = documents.filter(condition)
        restricted = bool(condition)
    # PostgreSQL text can't hold NUL; a query carrying one would fail the leg.
    query = (query or "").replace("\x00", " ").strip()
    if not query:
        return []
    mode = channel.retriever_mode
    candidates = max(channel.retriever_candidates, limit)
    rankings: list[list[tuple[int, float]]] = []
    if mode in (Channel.RetrieverMode.VECTOR, Channel.RetrieverMode.HYBRID):
        embedder = embeddings.get_embedder()
        vector = _embedding_threads.submit(embedder.embed_query, query)
    scope = Scope.of(channel, documents, restricted)
    with transaction.atomic():
        if mode in (Channel.RetrieverMode.KEYWORD, Channel.RetrieverMode.HYBRID):
            rankings.append(keyword_leg(scope, query, candidates))
        if mode in (Channel.RetrieverMode.VECTOR, Channel.RetrieverMode.HYBRID):
            rankings.append(
                vector_leg(scope, vector.result(), embedder.model_name, candidates)
            )
    if len(rankings) == 1:
        ranked = rankings[0][:limit]
    else:
        fused = reciprocal_rank_fusion(
            [[chunk_id for chunk_id, _ in ranking] for ranking in rankings],
            k=channel.retriever_rrf_k,
        )
        ranked = fused[:limit]
    return _load(channel, ranked)


def _load(channel: Channel, ranked: list[tuple[int, float]]) -> list[RetrievedChunk]:
    if not ranked:
        return []
    chunks = Chunk.objects.filter(id__in=[chunk_id for chunk_id, _ in ranked]).values(
        "id",
        "document_id",
        "document__title",
        "document__original_filename",
        "document__metadata",
        "page_number",
        "text",
    )
    by_id = {row["id"]: row for row in chunks}
    shown = [
        f.name for f in channel.metadata_fields.all() if f.enable_in_mcp_retrieve_chunks
    ]
    results = []
    for chunk_id, score in ranked:
        row = by_id.get(chunk_id)
        if row is None:
            continue
        metadata = row["document__metadata"] or {}
        if shown:
            metadata = {name: metadata[name] for name in shown if name in metadata}
        results.append(
            RetrievedChunk(
                chunk_id=row["id"],
                document_id=row["document_id"],
                document_title=row["document__title"]
                or row["document__original_filename"],
                page_number=row["page_number"],
                text=row["text"],
                score=float(score),
                metadata=metadata,
            )
        )
    return results
