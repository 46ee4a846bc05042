"""tools/list or a tool call through Quire's whole ASGI application in-process.

    .venv/bin/python benchmarks/mcp_inprocess.py [--calls 1000] [--profile]
    QUIRE_DATABASE_NAME=quire_bench .venv/bin/python benchmarks/mcp_inprocess.py \
        --tool retrieve_text_chunks --channel scifact-... [--query TEXT] [--profile]

No HTTP server and no client: one event loop calls `project.asgi.application`
with the scope, receive and send a server would give it, `--calls` times, on a
channel with the MCP overhead benchmark's fields (so tools/list carries filter
schemas) and a few documents' metadata (no ingestion, no embedder). Prints the
process's CPU ms per call (this process's threads; PostgreSQL's work for the
admission statement is in another process and not counted) and, with
`--profile`, pyinstrument's call tree. Uses its own database
(QUIRE_DATABASE_NAME, default quire_inprocess).

`--tool NAME` sends tools/call instead (arguments `--arguments` JSON, and
`query` from `--query`, or SciFact's test queries in turn when `--data` is
given) to an ingested channel (`--channel SLUG`, e.g. the one langchain_mcp.py
or scifact.py left in quire_bench), and prints the wall time per call (p50,
p95: a tool call waits for PostgreSQL and the embedder) and the SQL statements
each call sent.
"""

import argparse
import asyncio
import json
import os
import sys
import time

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
os.environ.setdefault("QUIRE_DATABASE_NAME", "quire_inprocess")
os.environ.setdefault("TASKS_BACKEND", "django.tasks.backends.dummy.DummyBackend")
os.environ["MCP_RATE_LIMIT_PER_MINUTE"] = "100000000"
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402

SLUG = "perf-inprocess"
PROTOCOL_VERSION = "2025-06-18"


def prepare(slug: str = SLUG) -> str:
    """The channel (once) and a fresh key for it."""
    from documents.access import COMMAND_LINE
    from documents.models import Channel
    from documents.services.channels import create_channel
    from documents.services.keys import create_api_key

    call_command("migrate", verbosity=0)
    channel = Channel.objects.filter(slug=slug).first()
    if channel is None and slug != SLUG:
        raise SystemExit(f"no channel {slug!r} in {os.environ['QUIRE_DATABASE_NAME']}")
    if channel is None:
        channel = create_channel(
            slug=SLUG,
            name="In-process MCP benchmark",
            fields=[
                {"name": "kind", "type": "string", "filterable": True},
                {"name": "topics", "type": "string_list", "filterable": True},
                {"name": "published", "type": "date", "filterable": True},
                {"name": "year", "type": "number", "filterable": True},
            ],
        )
    return create_api_key(
        actor=COMMAND_LINE, name="in-process benchmark", channels=[channel]
    ).raw_key


def scope(key: str, body: bytes, slug: str = SLUG) -> dict:
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": f"/mcp/{slug}",
        "raw_path": f"/mcp/{slug}".encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [
            (b"host", b"127.0.0.1:8000"),
            (b"authorization", f"Bearer {key}".encode()),
            (b"content-type", b"application/json"),
            (b"accept", b"application/json, text/event-stream"),
            (b"mcp-protocol-version", PROTOCOL_VERSION.encode()),
            (b"content-length", str(len(body)).encode()),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
        "state": {},
    }


async def call(
    app,
    key: str,
    request_id: int,
    *,
    method: str = "tools/list",
    params: dict | None = None,
    slug: str = SLUG,
) -> tuple[int, bytes]:
    body = json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}
    ).encode()
    sent = False
    done = asyncio.Event()

    async def receive():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    status, parts = 0, []

    async def send(message):
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            parts.append(message.get("body", b""))
            if not message.get("more_body", False):
                done.set()

    await app(scope(key, body, slug), receive, send)
    done.set()
    return status, b"".join(parts)


async def run(calls: int, profile: bool) -> None:
    from project.asgi import application

    key = await asyncio.to_thread(prepare)
    for index in range(50):  # warm: caches, pool, threads
        status, content = await call(application, key, index)
        if status != 200 or b'"tools"' not in content:
            raise SystemExit(f"tools/list failed: {status} {content[:300]!r}")
    profiler = None
    if profile:
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.0002, async_mode="disabled")
        profiler.start()
    cpu, wall = time.process_time(), time.perf_counter()
    for index in range(calls):
        await call(application, key, index)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    if profiler is not None:
        profiler.stop()
        print(profiler.output_text(unicode=False, color=False, show_all=False))
    print(
        f"tools/list in-process: {calls} calls, {cpu / calls * 1000:.3f} CPU ms/call, "
        f"{wall / calls * 1000:.3f} wall ms/call (load average "
        f"{os.getloadavg()[0]:.2f})"
    )


class StatementCounter:
    """Counts the SQL statements every database connection of the process sends
    (each request thread has its own connection)."""

    def __init__(self) -> None:
        self.count = 0
        self.texts: list[str] = []
        self.keep = False

    def install(self) -> None:
        from django.db.backends.signals import connection_created

        def wrap(sender, connection, **kwargs):
            if self not in connection.execute_wrappers:
                connection.execute_wrappers.append(self)

        connection_created.connect(wrap, weak=False)

    def __call__(self, execute, sql, params, many, context):
        self.count += 1
        if self.keep:
            self.texts.append(" ".join(str(sql).split())[:150])
        return execute(sql, params, many, context)


async def run_tool(args) -> None:
    from project.asgi import application

    counter = StatementCounter()
    counter.install()
    key = await asyncio.to_thread(prepare, args.channel)
    if args.data:
        from pathlib import Path

        root = Path(args.data)
        judged = {
            line.split("\t")[0]
            for line in (root / "qrels" / "test.tsv").read_text().splitlines()[1:]
        }
        queries = [
            item["text"]
            for line in (root / "queries.jsonl").open()
            if (item := json.loads(line))["_id"] in judged
        ]
    else:
        queries = [args.query]
    extra = json.loads(args.arguments)

    async def one(index: int) -> float:
        params = {
            "name": args.tool,
            "arguments": {"query": queries[index % len(queries)], **extra},
        }
        started = time.perf_counter()
        status, content = await call(
            application,
            key,
            index,
            method="tools/call",
            params=params,
            slug=args.channel,
        )
        took = time.perf_counter() - started
        if status != 200 or b'"isError"' in content or b'"error"' in content[:60]:
            raise SystemExit(f"{args.tool} failed: {status} {content[:300]!r}")
        return took

    for index in range(20):  # warm: model, caches, pool, threads
        await one(index)
    counter.count, counter.keep = 0, True
    await one(0)
    print(f"one {args.tool} call: {counter.count} SQL statements")
    for text in counter.texts:
        print(f"  {text}")
    counter.keep = False
    profiler = None
    if args.profile:
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.0002, async_mode="enabled")
        profiler.start()
    counter.count = 0
    cpu = time.process_time()
    walls = [await one(index) for index in range(args.calls)]
    cpu = time.process_time() - cpu
    if profiler is not None:
        profiler.stop()
        print(profiler.output_text(unicode=False, color=False, show_all=False))
    walls.sort()
    print(
        f"{args.tool} in-process: {args.calls} calls, "
        f"p50 {walls[len(walls) // 2] * 1000:.2f} ms, "
        f"p95 {walls[int(len(walls) * 0.95)] * 1000:.2f} ms wall, "
        f"{cpu / args.calls * 1000:.2f} CPU ms/call (this process), "
        f"{counter.count / args.calls:.1f} statements/call (load average "
        f"{os.getloadavg()[0]:.2f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--tool", help="tools/call this tool instead of tools/list")
    parser.add_argument("--channel", default=SLUG)
    parser.add_argument("--query", default="vitamin D deficiency and bone density")
    parser.add_argument("--data", help="a SciFact folder: its test queries in turn")
    parser.add_argument("--arguments", default='{"limit": 10}')
    args = parser.parse_args()
    import logging

    logging.getLogger("mcp_endpoint").setLevel(logging.INFO)
    if args.tool:
        asyncio.run(run_tool(args))
    else:
        asyncio.run(run(args.calls, args.profile))


if __name__ == "__main__":
    main()
