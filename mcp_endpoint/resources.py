"""Quire's MCP resources: documents' metadata, and index statistics."""

import json
import re

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db.models import Count, Q

from documents.ingestion.embeddings import OnnxMiniLMEmbedder
from documents.limits import MAX_DOCUMENT_IDS
from documents.models import Channel, Chunk, Document, Page
from documents.results import provenance_of, revision_of
from mcp_endpoint.registry import (
    CallContext,
    InvalidResourceUri,
    Resource,
    ResourceTemplate,
    registry,
)

DOCUMENT_IDS = re.compile(r"[1-9][0-9]*(?:,[1-9][0-9]*)*")


def parse_document_ids(text: str) -> list[int]:
    """`1` or `1,5,9`: positive integers, comma-separated, no spaces; else
    InvalidResourceUri."""
    if not DOCUMENT_IDS.fullmatch(text):
        raise InvalidResourceUri(
            "document_ids must be positive integers separated by commas, without "
            "spaces: documents://metadata/1 or documents://metadata/1,5,9."
        )
    ids = [int(part) for part in text.split(",")]
    if len(ids) > MAX_DOCUMENT_IDS:
        raise InvalidResourceUri(f"At most {MAX_DOCUMENT_IDS} document ids per read.")
    return ids


def _json_contents(uri: str, data) -> list[dict]:
    return [
        {
            "uri": uri,
            "mimeType": "application/json",
            "text": json.dumps(data, ensure_ascii=False),
        }
    ]


def _documents_metadata(channel: Channel, ids: list[int]) -> dict:
    documents = (
        Document.objects.for_channel(channel)
        .ready()
        .filter(pk__in=ids)
        .select_related("source")
        .only("id", "metadata", "revision", "revised_at", "source__name", "source_url")
        .order_by("id")
    )
    # Quire's fields first: a channel field of the same name takes their place,
    # as in list_documents' rows.
    return {
        str(document.pk): {
            **revision_of(document),
            **provenance_of(document),
            **document.metadata,
        }
        for document in documents
    }


class DocumentMetadata(ResourceTemplate):
    """The stored metadata of documents, as one JSON object keyed by document id,
    each with the document's `revision`, `revised_at`, `source` (the name of
    the source it is synced from, or null) and `source_url` (its public
    address there, or null); a channel field of one of those names keeps its
    own value.

    document_ids: comma-separated ids without spaces (1 or 1,5,9); ids this
    collection doesn't have are left out.
    """

    uri_template = "documents://metadata/{document_ids}"
    name = "document_metadata"
    title = "Document metadata"

    async def read(self, uri: str, ctx: CallContext) -> list[dict]:
        ids = parse_document_ids(uri.removeprefix(self.prefix))
        data = await sync_to_async(_documents_metadata)(ctx.channel, ids)
        return _json_contents(uri, data)


def configured_embedding_model() -> str:
    if settings.EMBEDDING_BACKEND == "openai":
        return f"openai:{settings.EMBEDDING_MODEL}"
    return OnnxMiniLMEmbedder.model_name


def index_stats(channel: Channel) -> dict:
    """Counts of the channel's documents by status, its pages (and how many of
    them were read by OCR) and chunks."""
    by_status = dict.fromkeys(Document.Status.values, 0)
    for row in (
        Document.objects.for_channel(channel).values("status").annotate(n=Count("id"))
    ):
        by_status[row["status"]] = row["n"]
    chunks = Chunk.objects.for_channel(channel)
    return {
        "documents": {**by_status, "total": sum(by_status.values())},
        **Page.objects.filter(document__channel=channel).aggregate(
            pages=Count("id"), ocr_pages=Count("id", filter=Q(ocr=True))
        ),
        "chunks": chunks.count(),
        "embedding_model": configured_embedding_model(),
        "embedding_models_in_index": sorted(
            set(
                chunks.exclude(embedding_model="")
                .values_list("embedding_model", flat=True)
                .distinct()
            )
        ),
        "corpus_version": channel.corpus_version,
    }


class IndexStats(Resource):
    """Statistics of this collection: documents by status, pages (and how many
    were read by OCR), chunks, and the embedding model in use."""

    uri = "index://stats"
    name = "index_stats"
    title = "Index statistics"

    async def read(self, uri: str, ctx: CallContext) -> list[dict]:
        return _json_contents(uri, await sync_to_async(index_stats)(ctx.channel))


registry.register(DocumentMetadata())
registry.register(IndexStats())
