"""`make bench`: every comparison with the peers, in one run.

    .venv/bin/python benchmarks/bench.py [--data ../shared/data/scifact] [--quick]

Runs, one after the other in their own processes on the benchmark database:
benchmarks/mcp_overhead.py (Quire's MCP endpoint against FastMCP 4),
benchmarks/langchain_pgvector.py (SciFact retrieval against LangChain's
PGVectorStore), benchmarks/langchain_mcp.py (retrieve_text_chunks and rag_search
over MCP against a FastMCP server on LangChain's PGVectorStore),
benchmarks/profile_hot_paths.py (pyinstrument profile and query
counts of tools/list, retrieve_text_chunks, rag_search) and
benchmarks/memory_startup.py (start-up time and resident memory of a worker).
Each prints its own figures; this prints the machine and the time they took.
"""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
STEPS = [
    (
        "MCP overhead against FastMCP",
        "mcp_overhead.py",
        ["--rounds", "3"],
        ["--seconds", "2", "--rounds", "2"],
    ),
    (
        "SciFact retrieval against LangChain PGVectorStore",
        "langchain_pgvector.py",
        [],
        [],
    ),
    (
        "SciFact over MCP against FastMCP + LangChain PGVectorStore",
        "langchain_mcp.py",
        [],
        ["--subset", "300", "--queries", "100"],
    ),
    ("Hot paths (pyinstrument)", "profile_hot_paths.py", [], ["--calls", "20"]),
    ("Start-up and memory", "memory_startup.py", ["--runs", "3"], ["--runs", "1"]),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data", default=str(HERE.parent.parent / "shared/data/scifact")
    )
    parser.add_argument(
        "--quick", action="store_true", help="shorter runs, for a smoke test"
    )
    args = parser.parse_args()
    load = os.getloadavg()
    print(
        f"Quire benchmarks against the peers: {os.cpu_count()} cores, load average "
        f"{load[0]:.1f} at start, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        flush=True,
    )
    failed = []
    for title, script, full, quick in STEPS:
        print(f"\n### {title} ({script})", flush=True)
        started = time.perf_counter()
        command = [sys.executable, str(HERE / script), "--data", args.data]
        command += quick if args.quick else full
        if subprocess.run(command, cwd=HERE.parent).returncode != 0:
            failed.append(script)
        print(f"({script}: {time.perf_counter() - started:.0f} s)", flush=True)
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
