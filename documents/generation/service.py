"""answer_question: retrieval, then the channel's generator, cached per corpus."""

import hashlib
import json

import numpy as np
from django.conf import settings
from django.core.cache import cache

from documents.generation.base import Answer, Generator
from documents.generation.chat import ChatGenerator
from documents.generation.extractive import ExtractiveGenerator
from documents.ingestion import embeddings
from documents.models import Channel
from documents.replicas import replica_read_current
from documents.search.service import retrieve_chunks, submit_query_embedding
from documents.telemetry import tracing

CACHE_SECONDS = 24 * 60 * 60
# An answer looks for its evidence in at least this many chunks.
ANSWER_CHUNKS = 32
# Part of every cache key: bump it when answers are written differently.
ANSWER_FORMAT = 3


def get_generator(channel: Channel) -> Generator:
    """The generator the channel is configured with."""
    if channel.generator_kind == Channel.GeneratorKind.CHAT:
        return ChatGenerator.for_channel(channel)
    return ExtractiveGenerator()


def answer_cache_key(
    channel: Channel,
    corpus_version: int,
    query: str,
    document_ids: list[int] | None,
    metadata_filter: dict | None,
) -> str:
    """Cache key of an answer: channel, corpus version, question, restriction and
    the generator settings (changing them must not serve old answers)."""
    payload = json.dumps(
        {
            "query": query,
            "document_ids": sorted(document_ids) if document_ids else None,
            "filter": None if document_ids else metadata_filter,
            "generator": [
                channel.generator_kind,
                channel.generator_endpoint,
                channel.generator_model,
                channel.generator_temperature,
                channel.retriever_mode,
                channel.retriever_candidates,
                channel.retriever_top_k,
                channel.retriever_rrf_k,
                settings.ANSWER_MIN_SCORE,
                settings.ANSWER_MAX_CHARS,
                ANSWER_FORMAT,
            ],
        },
        sort_keys=True,
        default=str,
    )
    digest = hashlib.sha256(payload.encode()).hexdigest()
    return f"quire:answer:{channel.pk}:{corpus_version}:{digest}"


@replica_read_current
def evidence_chunks(
    channel: Channel,
    query: str,
    *,
    document_ids: list[int] | None = None,
    metadata_filter: dict | None = None,
):
    """The chunks an answer draws on: the channel's retrieval, at least
    ANSWER_CHUNKS deep (the sentence that answers is not always in the
    channel's top few). Read on a replica only once it has replayed the
    channel's version the answer is cached under."""
    return retrieve_chunks(
        channel,
        query,
        document_ids=document_ids,
        metadata_filter=metadata_filter,
        limit=max(channel.retriever_top_k, ANSWER_CHUNKS),
    )


def answer_question(
    channel: Channel,
    query: str,
    *,
    document_ids: list[int] | None = None,
    metadata_filter: dict | None = None,
) -> Answer:
    """Answer `query` from the channel's documents with inline citations
    `[Document <id>, Page <n>]` ("No references found" appended when none).

    Same restrictions as retrieve_chunks (FilterError for a bad filter). Repeat
    questions come from the cache until the channel's corpus changes.
    """
    # From the primary: the key names the corpus the answer is drawn from.
    corpus_version = (
        Channel.objects.filter(pk=channel.pk)
        .values_list("corpus_version", flat=True)
        .first()
    )
    if corpus_version is not None and corpus_version != channel.corpus_version:
        channel = Channel.objects.get(pk=channel.pk)
    key = answer_cache_key(
        channel, corpus_version or 0, query, document_ids, metadata_filter
    )
    cached = cache.get(key)
    if cached is not None:
        return Answer.from_cache(cached)
    # Asked for together with retrieval's own, so the query embedder runs the
    # two as one batch (QueryBatcher) rather than one after the other.
    embedder = embeddings.get_embedder()
    question = submit_query_embedding(embedder, query)
    chunks = evidence_chunks(
        channel, query, document_ids=document_ids, metadata_filter=metadata_filter
    )
    vector = np.asarray(question.result(), dtype=np.float32)
    generator = get_generator(channel)
    with tracing.span("answer", **{"quire.generator": channel.generator_kind}):
        answer = generator.generate(query, chunks, query_vector=vector)
    cache.set(key, answer.to_cache(), CACHE_SECONDS)
    return answer
