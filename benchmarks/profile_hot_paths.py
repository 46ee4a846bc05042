"""Profile the MCP hot paths with pyinstrument and count their queries.

    .venv/bin/python benchmarks/profile_hot_paths.py [--calls 50] [--frames 25]

Each path is called through Django's test client (the real view, protocol,
tools and services) on the MCP overhead benchmark's channel: `tools/list` (per
channel schemas with enums), `retrieve_text_chunks` (a different SciFact query
each call), and `rag_search` with the extractive generator (distinct questions,
so every call misses the answer cache, then the same questions again, which
hit it). Prints milliseconds and SQL queries per call, and pyinstrument's call
tree of the synchronous work (services, ORM, embedding), which runs on this
thread because the client is driven through async_to_sync.
"""

import argparse
import json
import logging
import time

import mcp_overhead
import scifact
from asgiref.sync import async_to_sync
from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.test import AsyncClient
from django.test.utils import CaptureQueriesContext
from pyinstrument import Profiler

from documents.models import Channel


def post(client: AsyncClient, slug: str, key: str, body: dict) -> dict:
    response = async_to_sync(client.post)(
        f"/mcp/{slug}",
        data=json.dumps(body),
        content_type="application/json",
        headers={
            "Authorization": f"Bearer {key}",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": mcp_overhead.PROTOCOL_VERSION,
        },
    )
    message = json.loads(response.content)
    if response.status_code != 200 or "error" in message:
        raise RuntimeError(f"{body['method']} failed: {response.content[:300]!r}")
    if message["result"].get("isError"):
        raise RuntimeError(f"tool error: {message['result']['content'][0]['text']}")
    return message["result"]


def tool_call(name: str, arguments: dict, request_id: int) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def measure(
    label: str,
    bodies: list[dict],
    send,
    *,
    frames: int,
    warm: dict | None = None,
    profile: bool = True,
) -> dict:
    """One untimed call (`warm`, else the first body) loads what loads once; then
    every body, timed and profiled: ms/call, queries/call, the call tree."""
    send(warm or bodies[0])
    profiler = Profiler(interval=0.0005)
    with CaptureQueriesContext(connection) as queries:
        if profile:
            profiler.start()
        started = time.perf_counter()
        for body in bodies:
            send(body)
        elapsed = time.perf_counter() - started
        if profile:
            profiler.stop()
    per_call = elapsed / len(bodies) * 1000
    per_query = len(queries.captured_queries) / len(bodies)
    print(f"\n== {label}: {per_call:.2f} ms/call, {per_query:.1f} queries/call")
    if profile:
        tree = profiler.output_text(unicode=False, color=False, show_all=False)
        print("\n".join(tree.splitlines()[4 : 4 + frames]))
    return {"ms": per_call, "queries": per_query}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data", type=scifact.Path, default=scifact.ROOT.parent / "shared/data/scifact"
    )
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--frames", type=int, default=25, help="lines of each tree")
    args = parser.parse_args()
    call_command("migrate", verbosity=0, interactive=False)
    corpus, queries, _ = scifact.load_beir(args.data)
    channel = mcp_overhead.prepare_perf_channel(corpus)
    if channel.generator_kind != Channel.GeneratorKind.EXTRACTIVE:
        raise SystemExit(f"{channel.slug} must use the extractive generator")
    key = mcp_overhead.new_key(channel)
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    client = AsyncClient()
    # The call log would interleave with the report (its cost is measured by
    # benchmarks/mcp_overhead.py, where the server logs as in production).
    logging.getLogger("mcp_endpoint").setLevel(logging.WARNING)

    def send(body: dict) -> dict:
        return post(client, channel.slug, key, body)

    texts = list(queries.values())
    calls = args.calls
    print(f"Hot paths of /mcp/{channel.slug} ({calls} calls each, pyinstrument)")
    tools_list = [
        {"jsonrpc": "2.0", "id": n, "method": "tools/list"} for n in range(calls)
    ]
    measure("tools/list", tools_list, send, frames=args.frames)
    chunks = [
        tool_call("retrieve_text_chunks", {"query": texts[n]}, n) for n in range(calls)
    ]
    measure("retrieve_text_chunks", chunks, send, frames=args.frames)
    # Questions no earlier run asked, so the answer cache misses.
    salt = time.strftime("%H%M%S")
    questions = [
        tool_call("rag_search", {"query": f"{texts[calls + n]} ({salt})"}, n)
        for n in range(calls)
    ]
    warm = tool_call("rag_search", {"query": f"warm up {salt}"}, 0)
    measure("rag_search (cache miss)", questions, send, frames=args.frames, warm=warm)
    measure(
        "rag_search (cache hit)", questions, send, frames=args.frames, profile=False
    )


if __name__ == "__main__":
    main()
