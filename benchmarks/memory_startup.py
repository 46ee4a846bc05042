"""Start-up time and resident memory of one web worker, Quire beside FastMCP.

    .venv/bin/python benchmarks/memory_startup.py [--runs 3]

Starts each server (one uvicorn worker, as in benchmarks/mcp_overhead.py) from
nothing, and measures the time from launching the process to its first answered
`tools/list`, then to its first answered `retrieve_text_chunks` (which loads the
embedder on demand), and the worker's resident memory (VmRSS) once the embedder is
loaded, after a few more searches. Runs alternate between the two servers;
medians are printed.
"""

import argparse
import asyncio
import statistics
import time

import mcp_overhead
import scifact
from django.core.management import call_command


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


async def first_calls(server: mcp_overhead.Server, key: str, queries: list[str]):
    """(seconds to the first tools/list, to the first search, RSS MiB after)."""
    import httpx

    started = server.start()
    ready = await mcp_overhead.wait_ready(server, key)
    async with httpx.AsyncClient(timeout=120) as client:
        for number, query in enumerate(queries):
            body = {
                "jsonrpc": "2.0",
                "id": number,
                "method": "tools/call",
                "params": {
                    "name": "retrieve_text_chunks",
                    "arguments": {"query": query},
                },
            }
            response = await client.post(
                server.url, json=body, headers=mcp_overhead.headers(key)
            )
            problem = mcp_overhead.check_reply(response)
            if problem:
                raise RuntimeError(f"{server.name}: {problem}")
            if number == 0:
                searched = time.perf_counter()
    return ready - started, searched - started, rss_mib(server.process.pid)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data", type=scifact.Path, default=scifact.ROOT.parent / "shared/data/scifact"
    )
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    call_command("migrate", verbosity=0, interactive=False)
    corpus, queries, _ = scifact.load_beir(args.data)
    channel = mcp_overhead.prepare_perf_channel(corpus)
    key = mcp_overhead.new_key(channel)
    texts = list(queries.values())[:10]
    factories = {
        "Quire": mcp_overhead.quire_server,
        "FastMCP": mcp_overhead.fastmcp_server,
    }
    results: dict[str, list[tuple[float, float, float]]] = {
        name: [] for name in factories
    }
    for run in range(args.runs):
        names = list(factories) if run % 2 == 0 else list(factories)[::-1]
        for name in names:
            server = factories[name](1)
            try:
                results[name].append(asyncio.run(first_calls(server, key, texts)))
            finally:
                server.stop()
    print(f"Start-up and memory of one uvicorn worker (median of {args.runs} starts)")
    print(
        f"{'server':<8} {'first tools/list s':>19} {'first search s':>15} "
        f"{'RSS MiB (embedder loaded)':>26}"
    )
    for name, rows in results.items():
        listed, searched, rss = (
            statistics.median(column) for column in zip(*rows, strict=True)
        )
        print(f"{name:<8} {listed:>19.2f} {searched:>15.2f} {rss:>26.0f}")


if __name__ == "__main__":
    main()
