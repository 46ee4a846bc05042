"""Quire's MCP endpoint against a FastMCP 4 server of the same tools, side by side.

    .venv/bin/python benchmarks/mcp_overhead.py [--seconds 4] [--rounds 3]

Both servers run under uvicorn with the same number of workers, on the same
database and channel (SciFact abstracts with string, list, date and number
fields, so tools/list carries per-channel filter schemas with enums). The same
client load (a fixed number of concurrent keep-alive connections sending the same
JSON-RPC requests with the same API key) drives one server, then the other,
alternating which goes first in each round, so both see the same machine. Prints
requests/s and p50/p99 latency for tools/list and each tool call, and the ratios
Quire / FastMCP. tools/list is also sent to a bare ASGI app answering Quire's
bytes (benchmarks/peers/bare_asgi.py) in the same rounds: the floor of a call's
server CPU.

The channel lives in the benchmark database (QUIRE_DATABASE_NAME, default
quire_bench) and is reused by later runs.
"""

import argparse
import asyncio
import itertools
import json
import logging
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import scifact  # sets up Django on the benchmark database
from django.conf import settings  # noqa: E402
from django.core.files.base import ContentFile  # noqa: E402
from django.core.management import call_command  # noqa: E402

from documents.access import COMMAND_LINE  # noqa: E402
from documents.models import Channel, Document  # noqa: E402
from documents.services.keys import create_api_key  # noqa: E402

ROOT = scifact.ROOT
logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request otherwise
PERF_SLUG = "perf-mcp"
PERF_DOCUMENTS = 300
KINDS = ["trial", "review", "cohort", "case report", "meta-analysis", "in vitro"]
TOPICS = ["genetics", "immunology", "oncology", "cardiology", "neurology", "nutrition"]
PROTOCOL_VERSION = "2025-06-18"
# The bare ASGI app answering Quire's tools/list bytes: the floor of a call's CPU.
BARE = "bare ASGI"
# The operations the bare app is measured on (it answers only those bytes).
BARE_OPERATIONS = ("tools/list",)


def perf_metadata(index: int) -> dict:
    return {
        "kind": KINDS[index % len(KINDS)],
        "topics": [TOPICS[index % len(TOPICS)], TOPICS[(index * 7 + 3) % len(TOPICS)]],
        "published": f"{2000 + index % 25}-{1 + index % 12:02d}-{1 + index % 28:02d}",
        "year": 2000 + index % 25,
    }


def prepare_perf_channel(corpus: list[dict]) -> Channel:
    """The perf-mcp channel: PERF_DOCUMENTS SciFact abstracts with metadata,
    ingested through Quire's services (once; later runs reuse it)."""
    from documents.services.channels import create_channel
    from documents.services.documents import create_document
    from documents.services.ingestion import ingest_document

    channel = Channel.objects.filter(slug=PERF_SLUG).first()
    if channel is None:
        channel = create_channel(
            slug=PERF_SLUG,
            name="MCP overhead benchmark",
            fields=[
                {"name": "kind", "type": "string", "filterable": True},
                {
                    "name": "topics",
                    "type": "string_list",
                    "filterable": True,
                    "sent_with_chunks": True,
                },
                {"name": "published", "type": "date", "filterable": True},
                {"name": "year", "type": "number", "filterable": True},
            ],
            newest_sort=[{"field": "published", "direction": "desc"}],
        )
    present = Document.objects.for_channel(channel).count()
    started = time.perf_counter()
    for index, item in enumerate(corpus[present:PERF_DOCUMENTS], start=present):
        document = create_document(
            actor=COMMAND_LINE,
            channel=channel,
            file=ContentFile(scifact.document_text(item).encode()),
            filename=f"{item['_id']}.txt",
            title=(item.get("title") or "").strip(),
            metadata=perf_metadata(index),
            content_type="text/plain",
        )
        ingest_document(document_id=document.pk)
    if present < PERF_DOCUMENTS:
        print(
            f"ingested {PERF_DOCUMENTS - present} documents into {PERF_SLUG} in "
            f"{time.perf_counter() - started:.0f} s",
            file=sys.stderr,
        )
    return channel


def new_key(channel: Channel) -> str:
    return create_api_key(
        actor=COMMAND_LINE, name="mcp overhead benchmark", channels=[channel]
    ).raw_key


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_env(**extra: str) -> dict:
    """The environment of a server process: the benchmark database, no per-minute
    cap that a load test would hit, and nothing else changed."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("MCP_MAX_RESULTS", "TASKS_BACKEND")
    }
    env["QUIRE_DATABASE_NAME"] = settings.DATABASES["default"]["NAME"]
    # The counter still runs on every request; only the cap is out of reach.
    env["MCP_RATE_LIMIT_PER_MINUTE"] = "100000000"
    env.update(extra)
    return env


@dataclass
class Server:
    """A uvicorn process serving one MCP endpoint."""

    name: str
    app: str
    path: str
    workers: int
    env: dict
    # uvicorn's protocol: Quire runs its own (project.http_guard), as runquire does.
    http: str = "httptools"
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

    def start(self) -> float:
        """Start the server; the seconds until it answered its first call."""
        started = time.perf_counter()
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                self.app,
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--workers",
                str(self.workers),
                "--http",
                self.http,
                # As Quire is served (demo.web): no client may set its address.
                "--no-proxy-headers",
                "--no-access-log",
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return started

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def quire_server(workers: int) -> Server:
    return Server(
        "Quire",
        "project.asgi:application",
        f"/mcp/{PERF_SLUG}",
        workers,
        server_env(),
        http="project.http_guard:GuardedHttpToolsProtocol",
    )


def fastmcp_server(workers: int) -> Server:
    return Server(
        "FastMCP",
        "benchmarks.peers.fastmcp_server:app",
        "/mcp",
        workers,
        server_env(PEER_CHANNEL=PERF_SLUG),
    )


def bare_server(workers: int, reply_file: Path) -> Server:
    """The floor: uvicorn + httptools answering the bytes of `reply_file`."""
    return Server(
        BARE,
        "benchmarks.peers.bare_asgi:app",
        "/mcp",
        workers,
        server_env(BARE_REPLY_FILE=str(reply_file)),
    )


def headers(key: str) -> dict:
    return {
        "Authorization": f"Bearer {key}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL_VERSION,
    }


def check_reply(response) -> str | None:
    """None when the reply is a successful JSON-RPC result, else what is wrong."""
    if response.status_code != 200:
        return f"HTTP {response.status_code}: {response.text[:200]}"
    text = response.text
    if text.startswith("event:") or text.startswith("data:"):
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    message = json.loads(text)
    if "error" in message:
        return f"JSON-RPC error {message['error']}"
    if message["result"].get("isError"):
        return f"tool error {message['result']['content'][0]['text'][:200]}"
    return None


async def wait_ready(server: Server, key: str, timeout: float = 120.0) -> float:
    """Poll with tools/list until the server answers; returns when it did."""
    import httpx

    body = {"jsonrpc": "2.0", "id": 0, "method": "tools/list", "params": {}}
    deadline = time.perf_counter() + timeout
    async with httpx.AsyncClient(timeout=5) as client:
        while time.perf_counter() < deadline:
            if server.process.poll() is not None:
                raise RuntimeError(f"{server.name} exited with {server.process.poll()}")
            try:
                response = await client.post(
                    server.url, json=body, headers=headers(key)
                )
            except httpx.TransportError:
                await asyncio.sleep(0.05)
                continue
            problem = check_reply(response)
            if problem:
                raise RuntimeError(f"{server.name}: {problem}")
            return time.perf_counter()
    raise RuntimeError(f"{server.name} did not answer within {timeout} s")


@dataclass
class Load:
    """One measured run: how many calls finished, their latencies, failures, and
    the CPU seconds the server's processes spent meanwhile."""

    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    cpu: float = 0.0


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process and all its descendants, from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        times[int(entry)] = (int(fields[11]) + int(fields[12])) / ticks
    family, total = {pid}, 0.0
    for process in sorted(parents):
        if process in family or parents[process] in family:
            family.add(process)
    for process in family:
        total += times.get(process, 0.0)
    return total


async def drive(
    url: str,
    key: str,
    bodies: list[dict],
    *,
    concurrency: int,
    seconds: float,
    pid: int | None = None,
) -> Load:
    """`concurrency` keep-alive connections sending `bodies` in turn for `seconds`
    (and the CPU time of server process `pid` meanwhile)."""
    import httpx

    load = Load()
    counter = itertools.count()
    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        # One untimed call per connection opens it and warms the server (a
        # request, with an id: without one it would be a notification, answered
        # 202 at once, and the first timed calls would pay for the warm-up).
        warm_up = await asyncio.gather(
            *(
                client.post(url, json=dict(body, id=0), headers=headers(key))
                for body in itertools.islice(itertools.cycle(bodies), concurrency)
            )
        )
        for response in warm_up:
            if problem := check_reply(response):
                raise RuntimeError(f"warm-up call failed: {problem}")
        cpu_before = cpu_seconds(pid) if pid else 0.0
        started = time.perf_counter()
        stop_at = started + seconds

        async def worker() -> None:
            while time.perf_counter() < stop_at:
                body = dict(bodies[next(counter) % len(bodies)], id=next(counter))
                sent = time.perf_counter()
                response = await client.post(url, json=body, headers=headers(key))
                load.latencies.append(time.perf_counter() - sent)
                problem = check_reply(response)
                if problem and len(load.failures) < 5:
                    load.failures.append(problem)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
        load.seconds = time.perf_counter() - started
        load.cpu = cpu_seconds(pid) - cpu_before if pid else 0.0
    return load


def operations(channel: Channel, queries: list[str]) -> dict[str, list[dict]]:
    """The requests of each measured operation (both servers get the same ones)."""
    document_ids = list(
        Document.objects.for_channel(channel).ready().values_list("id", flat=True)
    )

    def call(name: str, arguments: dict) -> dict:
        return {
            "jsonrpc": "2.0",
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }

    return {
        "tools/list": [{"jsonrpc": "2.0", "method": "tools/list", "params": {}}],
        "list_documents": [
            call("list_documents", {"limit": 10, "offset": offset})
            for offset in range(0, 100, 10)
        ],
        "retrieve_text_chunks": [
            call("retrieve_text_chunks", {"query": query}) for query in queries
        ],
        "get_pages": [
            call(
                "get_pages",
                {
                    "document_id": pk,
                    "page_start": 1,
                    "page_end": 1,
                    "type": "text",
                },
            )
            for pk in document_ids[:50]
        ],
    }


def summarise(loads: list[Load]) -> tuple[float, float, float, float, list[str]]:
    """(requests/s, p50 ms, p99 ms, server CPU ms per request, failures)."""
    latencies = [value for load in loads for value in load.latencies]
    seconds = sum(load.seconds for load in loads)
    failures = [problem for load in loads for problem in load.failures]
    return (
        len(latencies) / seconds,
        scifact.percentile(latencies, 0.5) * 1000,
        scifact.percentile(latencies, 0.99) * 1000,
        sum(load.cpu for load in loads) / len(latencies) * 1000,
        failures,
    )


async def reply_bytes(server: Server, key: str, body: dict) -> bytes:
    """One answer of `server` to `body`, as sent."""
    import httpx

    async with httpx.AsyncClient(timeout=30) as client:
        response = await client.post(
            server.url, json=dict(body, id=1), headers=headers(key)
        )
    if problem := check_reply(response):
        raise RuntimeError(f"{server.name}: {problem}")
    return response.content


async def compare(
    servers: list[Server],
    key: str,
    plan: dict[str, list[dict]],
    *,
    concurrency: int,
    seconds: float,
    rounds: int,
) -> dict[str, dict[str, tuple]]:
    """Interleaved runs: every operation, every round, both servers in turn."""
    results: dict[str, dict[str, tuple]] = {}
    for name, bodies in plan.items():
        measured = [
            server
            for server in servers
            if server.name != BARE or name in BARE_OPERATIONS
        ]
        loads: dict[str, list[Load]] = {server.name: [] for server in measured}
        for round_number in range(rounds):
            order = measured if round_number % 2 == 0 else measured[::-1]
            for server in order:
                loads[server.name].append(
                    await drive(
                        server.url,
                        key,
                        bodies,
                        concurrency=concurrency,
                        seconds=seconds,
                        pid=server.process.pid,
                    )
                )
        results[name] = {
            server: summarise(server_loads) for server, server_loads in loads.items()
        }
    return results


def report(results: dict[str, dict[str, tuple]], *, workers: int, concurrency: int):
    print(
        f"MCP overhead: Quire vs FastMCP {_fastmcp_version()} "
        f"({workers} uvicorn worker(s) each, {concurrency} concurrent connections; "
        "CPU = the server processes' CPU ms per request, PostgreSQL's not counted)"
    )
    print(
        f"{'operation':<22} {'server':<9} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} "
        f"{'CPU ms':>7}"
    )
    for name, by_server in results.items():
        for server, (rate, p50, p99, cpu, failures) in by_server.items():
            print(
                f"{name:<22} {server:<9} {rate:>8.1f} {p50:>8.2f} {p99:>8.2f} "
                f"{cpu:>7.2f}"
            )
            for problem in failures[:2]:
                print(f"    ! {server} failed: {problem}")
        quire, peer = by_server["Quire"], by_server["FastMCP"]
        print(
            f"{name:<22} {'ratio':<8} {quire[0] / peer[0]:>7.2f}x "
            f"{quire[1] / peer[1]:>7.2f}x {quire[2] / peer[2]:>7.2f}x "
            f"{quire[3] / peer[3]:>6.2f}x   (Quire / FastMCP)"
        )
        if BARE in by_server:
            floor = by_server[BARE][3]
            print(
                f"{name:<22} {'floor':<8} Quire pays {quire[3] - floor:.2f} CPU ms "
                f"above the bare ASGI app's {floor:.2f} ({quire[3] / floor:.1f}x), "
                f"FastMCP {peer[3] - floor:.2f} ({peer[3] / floor:.1f}x)"
            )


def _fastmcp_version() -> str:
    from importlib.metadata import version

    return version("fastmcp")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data", type=Path, default=ROOT.parent / "shared/data/scifact"
    )
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--only", action="append", help="measure only this operation (repeatable)"
    )
    args = parser.parse_args()
    call_command("migrate", verbosity=0, interactive=False)
    corpus, queries, _ = scifact.load_beir(args.data)
    channel = prepare_perf_channel(corpus)
    key = new_key(channel)
    plan = operations(channel, list(queries.values())[:50])
    if args.only:
        plan = {name: plan[name] for name in args.only}
    servers = [quire_server(args.workers), fastmcp_server(args.workers)]
    reply_file = ROOT / ".data" / "bench-mcp-overhead" / "tools-list.json"
    reply_file.parent.mkdir(parents=True, exist_ok=True)
    try:
        for server in servers:
            server.start()
        for server in servers:
            asyncio.run(wait_ready(server, key))
        if any(name in plan for name in BARE_OPERATIONS):
            reply_file.write_bytes(
                asyncio.run(reply_bytes(servers[0], key, plan["tools/list"][0]))
            )
            servers.append(bare_server(args.workers, reply_file))
            servers[-1].start()
            asyncio.run(wait_ready(servers[-1], key))
        results = asyncio.run(
            compare(
                servers,
                key,
                plan,
                concurrency=args.concurrency,
                seconds=args.seconds,
                rounds=args.rounds,
            )
        )
    finally:
        for server in servers:
            server.stop()
    report(results, workers=args.workers, concurrency=args.concurrency)


if __name__ == "__main__":
    main()
