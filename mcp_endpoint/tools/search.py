"""Tools that search a channel: passages, and answers with citations."""

import copy

from asgiref.sync import sync_to_async
from pydantic import BaseModel, ConfigDict, Field

from documents import generation
from documents.filters import FilterError
from documents.limits import MAX_ID, DocumentIds, Query
from documents.models import Channel, Document
from documents.search import service
from mcp_endpoint import schemas
from mcp_endpoint.citations import citation_page_url
from mcp_endpoint.protocol.extensions import PAGE_VIEWER_URI
from mcp_endpoint.registry import (
    CallContext,
    Tool,
    ToolResult,
    text_block,
)
from mcp_endpoint.tools.documents import json_result

QUERY_DESCRIPTION = (
    "One question or topic in natural language. Put one question per call, and "
    "no filtering instructions: use metadata_filter or document_ids for that."
)


class SearchArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: Query = Field(description=QUERY_DESCRIPTION)
    document_ids: DocumentIds | None = None
    metadata_filter: dict | None = None


class SearchTool(Tool):
    Args = SearchArgs
    error_types = (FilterError,)

    def description(self, channel: Channel) -> str:
        return f"{super().description(channel)}\n\n{schemas.UNTRUSTED_TEXT}"

    def input_schema(self, channel: Channel) -> dict:
        schema = super().input_schema(channel)
        schema["properties"]["document_ids"] = schemas.document_ids_schema()
        filter_schema = schemas.metadata_filter_schema(channel)
        filter_schema["description"] += " Ignored when document_ids is set."
        schema["properties"]["metadata_filter"] = filter_schema
        return schema


class RetrieveTextChunksArgs(SearchArgs):
    limit: int | None = Field(None, ge=1, le=MAX_ID)


class RetrieveTextChunks(SearchTool):
    """Find the passages of this collection that best match a query.

    Returns {"chunks": [{document_id, document_title, chunk_id, page_number, text,
    score, metadata, regions}]}, best first. Cite a passage as [Document <id>,
    Page <n>]; read the surrounding page with get_pages. `regions` are the boxes
    of the passage's lines on its PDF page. Pages without text (scans) are not
    searched: read those with get_pages.
    """

    name = "retrieve_text_chunks"
    title = "Retrieve text passages"
    Args = RetrieveTextChunksArgs

    def input_schema(self, channel: Channel) -> dict:
        schema = super().input_schema(channel)
        schema["properties"]["limit"] = {
            "anyOf": [
                {"type": "integer", "minimum": 1, "maximum": schemas.results_cap()},
                {"type": "null"},
            ],
            "default": None,
            "description": (
                f"How many passages to return (default {channel.retriever_top_k}, "
                f"at most {schemas.results_cap()})."
            ),
        }
        return schema

    def output_schema(self, channel: Channel) -> dict:
        return copy.deepcopy(schemas.CHUNKS_OUTPUT_SCHEMA)

    async def run(self, args: RetrieveTextChunksArgs, ctx: CallContext) -> ToolResult:
        chunks = await sync_to_async(_passages)(ctx.channel, args)
        return json_result({"chunks": [chunk.model_dump() for chunk in chunks]})


def _passages(channel: Channel, args: RetrieveTextChunksArgs) -> list:
    return service.retrieve_passages(
        channel,
        args.query,
        document_ids=args.document_ids,
        metadata_filter=args.metadata_filter,
        limit=args.limit,
    )


class RagSearch(SearchTool):
    """Answer a question from this collection, citing sources inline as
    [Document <id>, Page <n>].

    The answer quotes the sentences that answer, best first, each in quotation
    marks and followed by its label. The text ends with "No references found"
    when nothing in the collection supports an answer. The structured result
    lists the citations with their quotes, the quote's regions on the page and a
    link a person can open to see the quoted lines highlighted on the page.
    """

    name = "rag_search"
    title = "Answer with citations"
    ui_resource = PAGE_VIEWER_URI
    error_types = (FilterError, generation.GenerationError)

    def output_schema(self, channel: Channel) -> dict:
        return copy.deepcopy(schemas.ANSWER_OUTPUT_SCHEMA)

    async def run(self, args: SearchArgs, ctx: CallContext) -> ToolResult:
        # A chat model can take a while: clients that asked for progress get a
        # streamed answer, which keeps idle proxies from closing the call.
        await ctx.progress(0, 1, "Searching the collection and writing an answer")
        answer = await sync_to_async(generation.answer_question)(
            ctx.channel,
            args.query,
            document_ids=args.document_ids,
            metadata_filter=args.metadata_filter,
        )
        await ctx.progress(1, 1, "Answer ready")
        structured = answer.as_dict()
        for citation, out in zip(
            answer.citations, structured["citations"], strict=True
        ):
            span = (
                (citation.start, citation.end)
                if citation.start is not None and citation.end is not None
                else None
            )
            out["url"] = citation_page_url(
                Document(
                    pk=citation.document_id,
                    channel_id=ctx.channel.pk,
                    revision=citation.revision,
                ),
                base_url=ctx.base_url,
                page=citation.page_number,
                span=span,
                caller=ctx.caller,
            )
        return ToolResult([text_block(answer.text)], structured=structured)
