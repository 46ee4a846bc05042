"""The LangChain peer for benchmarks/langchain_mcp.py: FastMCP 4 over PGVectorStore.

    PEER_DATABASE_URL=postgresql+psycopg://... PEER_TABLE=langchain_scifact_... \
    PEER_TOKEN=secret .venv/bin/python -m uvicorn \
        benchmarks.peers.langchain_mcp_server:app --port 8103

The MCP server a user would write instead of Quire: FastMCP (stateless HTTP,
JSON responses) with two tools over langchain-postgres' `PGVectorStore` in
hybrid mode (a tsvector column with a GIN index beside the HNSW index, fused by
reciprocal rank fusion), its queries embedded by the same MiniLM model as
Quire's (benchmarks.langchain_pgvector.PeerEmbeddings). A bearer token
(PEER_TOKEN) guards it, as a user's gateway would.

- `retrieve_text_chunks(query, limit=10)`: the store's hybrid search;
- `rag_search(query)`: a retriever's four passages (LangChain's default k) as
  the answer's sources, the best one's first sentence as the answer: retrieval
  and stuffing without a language model, the least a LangChain RAG tool does.
"""

import os
import re
import sys
from pathlib import Path
from typing import Annotated

ROOT = Path(__file__).resolve().parents[2]
for folder in (ROOT, ROOT / "benchmarks"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

import django  # noqa: E402

django.setup()  # for the embedder's settings (model files, threads) only

from fastmcp import FastMCP  # noqa: E402
from langchain_pgvector import PeerEmbeddings  # noqa: E402
from langchain_postgres import PGEngine, PGVectorStore  # noqa: E402
from langchain_postgres.v2.hybrid_search_config import (  # noqa: E402
    HybridSearchConfig,
    reciprocal_rank_fusion,
)
from pydantic import Field  # noqa: E402

TABLE = os.environ["PEER_TABLE"]
TOKEN = os.environ.get("PEER_TOKEN", "")
CANDIDATES = int(os.environ.get("PEER_CANDIDATES", "100"))
RRF_K = int(os.environ.get("PEER_RRF_K", "60"))
RAG_K = 4
READ_ONLY = {"readOnlyHint": True, "destructiveHint": False}
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")

mcp = FastMCP("langchain-peer")
_store: PGVectorStore | None = None


async def _vector_store() -> PGVectorStore:
    global _store
    if _store is None:
        engine = PGEngine.from_connection_string(url=os.environ["PEER_DATABASE_URL"])
        _store = await PGVectorStore.create(
            engine,
            embedding_service=PeerEmbeddings(),
            table_name=TABLE,
            hybrid_search_config=HybridSearchConfig(tsv_column="content_tsv"),
        )
    return _store


async def _search(query: str, k: int) -> list:
    # A config per query: the store writes the query's keywords into the one
    # it is given.
    config = HybridSearchConfig(
        tsv_column="content_tsv",
        fusion_function=reciprocal_rank_fusion,
        fusion_function_parameters={"rrf_k": RRF_K},
        primary_top_k=max(CANDIDATES, k),
        secondary_top_k=max(CANDIDATES, k),
    )
    store = await _vector_store()
    return await store.asimilarity_search(query, k=k, hybrid_search_config=config)


@mcp.tool(annotations=READ_ONLY)
async def retrieve_text_chunks(
    query: Annotated[str, Field(min_length=1)],
    limit: Annotated[int, Field(ge=1, le=100)] = 10,
) -> dict:
    """Find the passages of this collection that best match a query."""
    found = await _search(query, limit)
    return {
        "chunks": [
            {"text": doc.page_content, "metadata": doc.metadata} for doc in found
        ]
    }


@mcp.tool(annotations=READ_ONLY)
async def rag_search(query: Annotated[str, Field(min_length=1)]) -> dict:
    """Answer a question from this collection, with its sources."""
    found = await _search(query, RAG_K)
    if not found:
        return {"answer": "No references found.", "citations": []}
    first = SENTENCE_END.split(found[0].page_content.strip(), maxsplit=1)[0]
    return {
        "answer": first,
        "citations": [
            {"metadata": doc.metadata, "quote": doc.page_content} for doc in found
        ],
    }


_mcp_app = mcp.http_app(path="/mcp", stateless_http=True, json_response=True)


async def app(scope, receive, send):
    """The FastMCP app behind a bearer-token check."""
    if scope["type"] == "http":
        expected = f"Bearer {TOKEN}".encode()
        sent = dict(scope["headers"]).get(b"authorization", b"")
        if TOKEN and sent != expected:
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [(b"content-type", b"text/plain")],
                }
            )
            await send({"type": "http.response.body", "body": b"unauthorized"})
            return
    await _mcp_app(scope, receive, send)
