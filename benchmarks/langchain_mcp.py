"""SciFact over MCP: Quire's endpoint beside a FastMCP server built on LangChain.

    .venv/bin/python benchmarks/langchain_mcp.py [--data ../shared/data/scifact]
        [--subset 300] [--queries N] [--tools retrieve_text_chunks]

The peer (benchmarks/peers/langchain_mcp_server.py) is the MCP server a user
would write instead of Quire: FastMCP 4 with `retrieve_text_chunks` and
`rag_search` over LangChain's `PGVectorStore` in hybrid mode (the table of
benchmarks/langchain_pgvector.py: the same PostgreSQL, the same chunks, the same
MiniLM vectors and query model, the same candidates per leg and RRF constant).
Both servers run under uvicorn with one worker; every judged SciFact query is sent
to each tool of each server over one keep-alive connection, one server's block
after the other's (alternating which goes first per tool), after a warm-up.
Prints p50/p95 latency of the whole MCP call (query embedding included) with
nDCG@10 of the documents the answer returned (retrieve_text_chunks: the chunks'
documents; rag_search: the documents cited, then the rest of the passages it
used), and the ratios Quire / LangChain. The channel's sentences are embedded
first, as the task queued after each ingestion does, so rag_search is timed as
a deployment serves it.

`--subset N` measures on a smaller channel: the documents judged relevant to
the test queries plus the first N others (a quick run; its nDCG is higher than
the full corpus's, for both systems alike). `--channel SLUG` takes a channel
already ingested (such as mcp_overhead.py's perf-mcp, 300 SciFact abstracts) as
it is, with the queries that have a relevant document in it.
"""

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path

import langchain_pgvector
import mcp_overhead
import scifact  # sets up Django on the benchmark database
from django.core.management import call_command

from documents.generation.vectors import prepare_document
from documents.models import Channel, Document

TOOLS = ("retrieve_text_chunks", "rag_search")
TOP_K = 10


def corpus_for(corpus: list[dict], qrels: dict, subset: int | None) -> list[dict]:
    """The whole corpus, or the judged documents plus the first `subset` others."""
    if subset is None:
        return corpus
    judged = {doc for relevant in qrels.values() for doc in relevant}
    others = [item for item in corpus if str(item["_id"]) not in judged][:subset]
    return [item for item in corpus if str(item["_id"]) in judged] + others


def servers(channel: Channel, key: str) -> list[mcp_overhead.Server]:
    quire = mcp_overhead.Server(
        "Quire",
        "project.asgi:application",
        f"/mcp/{channel.slug}",
        1,
        mcp_overhead.server_env(),
        http="project.http_guard:GuardedHttpToolsProtocol",
    )
    peer = mcp_overhead.Server(
        "LangChain",
        "benchmarks.peers.langchain_mcp_server:app",
        "/mcp",
        1,
        mcp_overhead.server_env(
            PEER_DATABASE_URL=langchain_pgvector.database_url(),
            PEER_TABLE=langchain_pgvector.table_name(channel),
            PEER_TOKEN=key,
            PEER_CANDIDATES=str(channel.retriever_candidates),
            PEER_RRF_K=str(channel.retriever_rrf_k),
        ),
    )
    return [quire, peer]


def ranked(server: str, tool: str, result: dict, ids: dict[int, str]) -> list[str]:
    """The SciFact ids of the documents a reply returned, best first, once each."""
    content = result.get("structuredContent") or json.loads(
        result["content"][0]["text"]
    )
    items = (
        content["chunks"] if tool == "retrieve_text_chunks" else content["citations"]
    )
    if server == "Quire":
        docs = [ids[item["document_id"]] for item in items]
    else:
        docs = [item["metadata"]["doc"] for item in items]
    return langchain_pgvector.ranked_documents(docs)


def forget_answer(channel: Channel, query: str) -> None:
    """Empty Quire's answer cache for `query` (each query is asked once per run)."""
    from django.core.cache import cache

    from documents.generation.service import answer_cache_key

    cache.delete(answer_cache_key(channel, channel.corpus_version, query, None, None))


async def measure(
    server: mcp_overhead.Server,
    tool: str,
    key: str,
    channel: Channel,
    judged: list[tuple[str, str]],
    qrels: dict,
    ids: dict[int, str],
) -> tuple[list[float], list[float]]:
    """(latencies, nDCG@10) of `tool` on `server` for every judged query."""
    import httpx

    def body(query: str, request_id: int) -> dict:
        arguments = {"query": query}
        if tool == "retrieve_text_chunks":
            arguments["limit"] = TOP_K
        return {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }

    latencies, ndcgs = [], []
    async with httpx.AsyncClient(timeout=120) as client:
        for n in range(5):
            await client.post(
                server.url,
                json=body(f"warm up {n}", n),
                headers=mcp_overhead.headers(key),
            )
        for n, (qid, query) in enumerate(judged):
            started = time.perf_counter()
            response = await client.post(
                server.url, json=body(query, n), headers=mcp_overhead.headers(key)
            )
            latencies.append(time.perf_counter() - started)
            if problem := mcp_overhead.check_reply(response):
                raise RuntimeError(f"{server.name} {tool}: {problem}")
            result = response.json()["result"]
            ndcgs.append(
                scifact.ndcg_at(ranked(server.name, tool, result, ids), qrels[qid], 10)
            )
    return latencies, ndcgs


def report(results: dict[str, dict[str, tuple]], count: int, documents: int) -> None:
    print(
        f"SciFact over MCP: Quire vs FastMCP {mcp_overhead._fastmcp_version()} + "
        f"LangChain PGVectorStore hybrid (langchain-postgres "
        f"{langchain_pgvector._version('langchain-postgres')}); {count} judged "
        f"queries, {documents} documents, one uvicorn worker each, one connection; "
        "latency of the whole MCP call, query embedding included"
    )
    print(f"{'tool':<22} {'server':<10} {'nDCG@10':>8} {'p50 ms':>8} {'p95 ms':>8}")
    for tool, by_server in results.items():
        for server, (latencies, ndcgs) in by_server.items():
            print(
                f"{tool:<22} {server:<10} {statistics.mean(ndcgs):>8.3f} "
                f"{scifact.percentile(latencies, 0.5) * 1000:>8.1f} "
                f"{scifact.percentile(latencies, 0.95) * 1000:>8.1f}"
            )
        (ours, our_ndcg), (theirs, their_ndcg) = by_server.values()
        print(
            f"{tool:<22} {'ratio':<10} "
            f"{statistics.mean(our_ndcg) / statistics.mean(their_ndcg):>7.2f}x "
            + " ".join(
                f"{scifact.percentile(ours, q) / scifact.percentile(theirs, q):>7.2f}x"
                for q in (0.5, 0.95)
            )
            + "   (Quire / LangChain)"
        )


def prepare_answers(channel: Channel) -> None:
    """Embed the channel's sentences as the task queued after each ingestion
    does (prepare_answers_task), so rag_search is timed as a deployment serves
    it rather than paying each page's first answer. Sentences that have their
    vector are skipped, so a rerun only checks."""
    started = time.perf_counter()
    ids = Document.objects.filter(channel=channel).values_list("id", flat=True)
    embedded = sum(prepare_document(document_id) for document_id in ids)
    print(
        f"prepared answers: {embedded} sentences embedded in "
        f"{time.perf_counter() - started:.0f} s",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data", type=Path, default=scifact.ROOT.parent / "shared/data/scifact"
    )
    parser.add_argument("--subset", type=int, default=None)
    parser.add_argument(
        "--channel",
        help="an ingested channel of SciFact documents, as it is (the queries "
        "with a relevant document in it, judged on its documents only)",
    )
    parser.add_argument("--queries", type=int, default=None, help="the first N only")
    parser.add_argument(
        "--tools",
        default=",".join(TOOLS),
        help="the tools to time, comma-separated (default: both; without "
        "rag_search the channel's sentences are not embedded first)",
    )
    args = parser.parse_args()
    tools = [tool for tool in TOOLS if tool in args.tools.split(",")]
    if not tools:
        parser.error(f"--tools: choose from {', '.join(TOOLS)}")
    call_command("migrate", verbosity=0, interactive=False)
    corpus, queries, qrels = scifact.load_beir(args.data)
    if args.channel:
        channel = Channel.objects.get(slug=args.channel)
        documents = scifact.corpus_ids(channel)
        present = set(documents.values())
        qrels = {
            qid: kept
            for qid, relevant in qrels.items()
            if (kept := {d: g for d, g in relevant.items() if d in present})
        }
    else:
        documents = corpus_for(corpus, qrels, args.subset)
        channel = scifact.prepare_channel(documents, workers=2)
    langchain_pgvector.langchain_store(channel)
    if "rag_search" in tools:
        prepare_answers(channel)
    ids = scifact.corpus_ids(channel)
    judged = [(qid, queries[qid]) for qid in qrels if qid in queries][: args.queries]
    key = mcp_overhead.new_key(channel)
    pair = servers(channel, key)
    results: dict[str, dict[str, tuple]] = {}
    try:
        for server in pair:
            server.start()
        for server in pair:
            asyncio.run(mcp_overhead.wait_ready(server, key))
        for turn, tool in enumerate(tools):
            for _, query in judged:
                forget_answer(channel, query)  # every rag_search does the work
            order = pair if turn % 2 == 0 else pair[::-1]
            measured = {
                server.name: asyncio.run(
                    measure(server, tool, key, channel, judged, qrels, ids)
                )
                for server in order
            }
            results[tool] = {server.name: measured[server.name] for server in pair}
    finally:
        for server in pair:
            server.stop()
    report(results, len(judged), len(documents))


if __name__ == "__main__":
    main()
