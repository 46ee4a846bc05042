"""Abuse: replays issue 11's items 5-7 against a live Quire and prints figures.

    .venv/bin/python benchmarks/abuse.py        # make bench-abuse

In its own stack (.data/bench-abuse: embedded PostgreSQL, uvicorn with two
workers and Quire's HTTP protocol, two ingestion workers), as a hostile client
would:

1. Unauthenticated bodies: a 200 MB upload with no key, and one with a
   read-only key; how many bytes the server took before it answered.
2. Slow sockets: 800 that never finish their headers and 300 that never finish
   their body, from 127.0.0.1, while a real client on 127.0.0.2 calls
   tools/list; how long the sockets stay open, and the real client's latency.
3. A hostile PDF (pages of a million rectangles each), then a small text file
   3 s later: how long the small file waits to be ready; and 60 re-ingest
   requests in a row: how many ingestions they queue.
4. A 100-page PDF sharing one noise image: page-image bytes per input byte.
5. Twelve parallel get_pages calls for images of 10 pages: the replies, and
   the web workers' peak memory during and after.
6. Text files of random words (1 MB and 50 MB), then a small file: how each
   ends (within INGEST_DOCUMENT_TIMEOUT and INGEST_MAX_CHUNKS, with its
   reason), and how long the small file waits to be ready.
7. Forwarded headers: 100 requests with a wrong key, each with a fresh
   X-Forwarded-For (and X-Forwarded-Proto: https), from 127.0.0.1 with
   PROXY_TRUSTED_HOPS=0: how many are throttled (429) after
   AUTH_FAILURES_PER_MINUTE, which addresses the audit trail recorded, and the
   scheme of the URL the 401 points at.

    .venv/bin/python benchmarks/abuse.py --only text        # just case 6
    .venv/bin/python benchmarks/abuse.py --only forwarded   # just case 7
"""

import argparse
import json
import socket
import statistics
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import stack  # noqa: E402

# The hostile files are the ones the ingestion tests and benchmark build.
from documents.tests.fixtures import (  # noqa: E402
    noise_image_pdf,
    random_words,
    rectangles_pdf,
)

SLUG = "abuse"
BIG = 200 * 1024 * 1024


# --- Probes ----------------------------------------------------------------------


def unauthenticated_upload(port: int, key: str | None) -> tuple[int, float, str]:
    """Send a 200 MB multipart upload as fast as the server takes it; (bytes
    the server accepted, seconds to the answer, status line)."""
    sock = socket.create_connection(("127.0.0.1", port))
    headers = [
        "POST /api/channels/abuse/documents HTTP/1.1",
        "Host: 127.0.0.1",
        "Content-Type: multipart/form-data; boundary=xyz",
        f"Content-Length: {BIG}",
    ]
    if key:
        headers.append(f"Authorization: Bearer {key}")
    sock.sendall(("\r\n".join(headers) + "\r\n\r\n").encode())
    sock.setblocking(False)
    chunk = b"x" * 65536
    sent, started, reply = 0, time.monotonic(), b""
    while sent < BIG and time.monotonic() - started < 60:
        try:
            reply += sock.recv(4096)
            if reply:
                break
        except BlockingIOError:
            pass
        except (ConnectionResetError, BrokenPipeError):
            break
        try:
            sent += sock.send(chunk)
        except BlockingIOError:
            time.sleep(0.001)
        except (BrokenPipeError, ConnectionResetError):
            break
    elapsed = time.monotonic() - started
    sock.close()
    status = reply.split(b"\r\n", 1)[0].decode(errors="replace") or "(closed)"
    return sent, elapsed, status


def slow_sockets(port: int, headers_only: int, bodies: int) -> list[socket.socket]:
    opened = []
    for number in range(headers_only + bodies):
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        except OSError:
            continue
        try:
            if number < headers_only:
                sock.sendall(b"GET /admin/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            else:
                sock.sendall(
                    b"POST /admin/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    b"Content-Type: application/x-www-form-urlencoded\r\n"
                    b"Content-Length: 100000\r\n\r\nusername="
                )
        except OSError:
            pass
        sock.setblocking(False)
        opened.append(sock)
    return opened


def still_open(sockets: list[socket.socket]) -> int:
    count = 0
    for sock in sockets:
        try:
            data = sock.recv(1)
            if data:
                count += 1  # answered, still open
        except BlockingIOError:
            count += 1
        except OSError:
            pass
    return count


def real_client(url: str, key: str, stop: threading.Event, out: list) -> None:
    source = ("127.0.0.2", 0)
    while not stop.is_set():
        started = time.monotonic()
        try:
            status, _, _ = mcp_from(url, key, source)
        except OSError:
            status = 0
        out.append((status, (time.monotonic() - started) * 1000))
        time.sleep(0.2)


def mcp_from(url: str, key: str, source: tuple[str, int]):
    """stack.mcp_call, from another local address."""
    import http.client

    host, port = url.split("//")[1].split("/")[0].split(":")
    connection = http.client.HTTPConnection(
        host, int(port), timeout=30, source_address=source
    )
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    connection.request(
        "POST",
        "/mcp/abuse",
        body,
        {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "Authorization": f"Bearer {key}",
            "MCP-Protocol-Version": "2025-11-25",
        },
    )
    response = connection.getresponse()
    response.read()
    connection.close()
    return response.status, None, None


def upload(port: int, key: str, name: str, data: bytes) -> dict:
    boundary = "quireabuse"
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
            f'filename="{name}"\r\nContent-Type: application/octet-stream\r\n\r\n'
        ).encode()
        + data
        + f"\r\n--{boundary}--\r\n".encode()
    )
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/channels/{SLUG}/documents",
        body,
        {
            "Content-Type": f"multipart/form-data; boundary={boundary}",
            "Authorization": f"Bearer {key}",
        },
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read())


def wait_ready(document_id: int, timeout: float = 900) -> tuple[str, float]:
    from documents.models import Document

    started = time.monotonic()
    while time.monotonic() - started < timeout:
        document = Document.objects.get(pk=document_id)
        if document.status in ("ready", "failed"):
            return document.status, time.monotonic() - started
        time.sleep(0.25)
    return "timeout", timeout


def bytes_read(web) -> int:
    """Bytes the web server's processes have read from sockets and files
    (/proc/<pid>/io rchar), summed."""
    total = 0
    process = psutil.Process(web.pid)
    for member in [process, *process.children(recursive=True)]:
        try:
            total += member.io_counters().read_chars
        except psutil.Error:
            pass
    return total


def web_rss(web) -> int:
    total = 0
    for child in psutil.Process(web.pid).children(recursive=True):
        try:
            total = max(total, child.memory_info().rss)
        except psutil.Error:
            pass
    return total


def text_files(port: int, key: str) -> None:
    """Case 6: a 1 MB and a 50 MB text file of random words, then a small
    file once both are queued (two ingestion workers). Before the per-document
    deadline and chunk budget, the 1 MB file took 254 s on a busy machine and
    the 50 MB one would have held its worker for hours."""
    from django.conf import settings

    from documents.models import Document

    print(
        "6. Text files of random words, then a small file (2 ingestion workers; "
        f"INGEST_DOCUMENT_TIMEOUT {settings.INGEST_DOCUMENT_TIMEOUT:g} s, "
        f"INGEST_MAX_CHUNKS {settings.INGEST_MAX_CHUNKS:,})"
    )
    files = {
        "words-1mb.txt": random_words(1_000_000),
        # Random words still, built from 1 MB pieces to save the generator time.
        "words-50mb.txt": random_words(1_000_000, seed=8) * 50,
    }
    uploaded = {}
    for name, data in files.items():
        started = time.monotonic()
        uploaded[name] = upload(port, key, name, data)
        print(
            f"   {name}: {len(data) / 1e6:.0f} MB uploaded in "
            f"{time.monotonic() - started:.1f} s"
        )
    small = upload(port, key, "note-after.txt", b"A short note after the big ones.\n")
    small_status, small_wait = wait_ready(small["id"])
    print(f"   the small file was {small_status} {small_wait:.1f} s after its upload")
    for name, document in uploaded.items():
        status, _ = wait_ready(document["id"], timeout=3600)
        row = Document.objects.get(pk=document["id"])
        end = row.ingested_at if status == "ready" else row.updated_at
        ended = (end - row.created_at).total_seconds()
        print(
            f"   {name}: {status} {ended:.0f} s after its upload, "
            f"{row.chunk_count} chunks; reason: {row.status_reason or '-'}"
        )


FORWARDED_REQUESTS = 100


def forwarded_headers(port: int) -> None:
    """Case 6: see the module docstring."""
    from django.conf import settings

    from documents.models import AuditEvent

    first_event = AuditEvent.objects.order_by("-id").values_list("id", flat=True)
    after = first_event.first() or 0
    statuses, challenges = [], set()
    started = time.monotonic()
    for number in range(FORWARDED_REQUESTS):
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/mcp/{SLUG}",
            json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode(),
            {
                "Content-Type": "application/json",
                "Accept": "application/json",
                "Authorization": "Bearer qk_wrong-key-of-the-right-length-000",
                "X-Forwarded-For": f"203.0.{113 + number // 250}.{number % 250 + 1}",
                "X-Forwarded-Proto": "https",
            },
            method="POST",
        )
        try:
            with urllib.request.urlopen(request) as response:
                statuses.append(response.status)
        except urllib.error.HTTPError as error:
            statuses.append(error.code)
            challenge = error.headers.get("WWW-Authenticate", "")
            if "resource_metadata=" in challenge:
                url = challenge.split('resource_metadata="', 1)[1]
                challenges.add(url.split("://", 1)[0])
    elapsed = time.monotonic() - started
    refused = AuditEvent.objects.filter(id__gt=after, action="auth.refused")
    addresses = sorted(
        {str(address) for address in refused.values_list("client_address", flat=True)}
    )
    first_throttled = statuses.index(429) + 1 if 429 in statuses else None
    print(
        f"   {FORWARDED_REQUESTS} wrong keys, each with its own X-Forwarded-For, in "
        f"{elapsed:.1f} s: {statuses.count(401)} x 401, {statuses.count(429)} x 429 "
        f"(the first 429 was request {first_throttled}; limit "
        f"{settings.AUTH_FAILURES_PER_MINUTE} a minute per address)"
    )
    print(
        f"   audit: {refused.count()} auth.refused rows, client addresses "
        f"{addresses}; the 401's resource_metadata URL scheme: "
        f"{sorted(challenges) or ['(no 401)']} (X-Forwarded-Proto: https was sent)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slow-headers", type=int, default=800)
    parser.add_argument("--slow-bodies", type=int, default=300)
    parser.add_argument(
        "--only",
        choices=["text", "forwarded"],
        help="run one case only (text: case 6, forwarded: case 7)",
    )
    args = parser.parse_args()
    env = stack.boot(
        "abuse", MCP_RATE_LIMIT_PER_MINUTE="100000", PROXY_TRUSTED_HOPS="0"
    )
    env["EMBEDDING_THREADS"] = "1"

    from django.db import connections
    from django_tasks_db.models import DBTaskResult

    from documents.access import COMMAND_LINE
    from documents.models import Channel, Page
    from documents.services.channels import create_channel
    from documents.services.documents import delete_channel
    from documents.services.keys import create_api_key
    from documents.services.queue import IN_FLIGHT

    for old in Channel.objects.filter(slug=SLUG):
        delete_channel(channel=old, actor=COMMAND_LINE)
    DBTaskResult.objects.all().delete()
    channel = create_channel(slug=SLUG, name="Abuse")
    reader = create_api_key(actor=COMMAND_LINE, name="reader", channels=[channel])
    writer = create_api_key(
        actor=COMMAND_LINE, name="writer", channels=[channel], scopes=["write"]
    )
    connections.close_all()
    port = stack.free_port()
    web = stack.start_web(env, workers=2, port=port)
    workers = [stack.start_worker(env), stack.start_worker(env)]
    url = f"http://127.0.0.1:{port}/mcp/{SLUG}"
    try:
        if args.only == "text":
            text_files(port, writer.raw_key)
            return 0
        if args.only == "forwarded":
            print("7. Forwarded headers from 127.0.0.1 (PROXY_TRUSTED_HOPS=0)")
            forwarded_headers(port)
            return 0
        print("1. Unauthenticated bodies (a 200 MB upload)")
        for label, key in (("no key", None), ("read-only key", reader.raw_key)):
            before = bytes_read(web)
            sent, seconds, status = unauthenticated_upload(port, key)
            time.sleep(0.5)
            print(
                f"   {label:14} {status}, answered in {seconds * 1000:.0f} ms; "
                f"the server read {(bytes_read(web) - before) / 1e3:.0f} kB in all "
                f"(the client got {sent / 1e6:.1f} MB into socket buffers first)"
            )

        print(
            f"2. Slow sockets: {args.slow_headers} slow headers and "
            f"{args.slow_bodies} slow bodies from 127.0.0.1"
        )
        stop, latencies = threading.Event(), []
        client = threading.Thread(
            target=real_client, args=(url, reader.raw_key, stop, latencies)
        )
        client.start()
        time.sleep(1.0)
        baseline = len(latencies)
        started = time.monotonic()
        sockets = slow_sockets(port, args.slow_headers, args.slow_bodies)
        print(f"   opened {len(sockets)} in {time.monotonic() - started:.1f} s")
        # Deadlines: headers HTTP_HEADER_TIMEOUT (10 s); a body whose headers
        # came HTTP_BODY_TIMEOUT (30 s) plus its length at HTTP_BODY_MIN_RATE.
        for wait in (0.5, 5, 15, 35):
            time.sleep(max(0.0, started + wait - time.monotonic()))
            print(f"   still open after {wait:4.1f} s: {still_open(sockets)}")
        stop.set()
        client.join()
        for sock in sockets:
            sock.close()
        during = [ms for status, ms in latencies[baseline:]]
        failed = sum(1 for status, _ in latencies[baseline:] if status != 200)
        during.sort()
        print(
            f"   real client (127.0.0.2) meanwhile: {len(during)} tools/list, "
            f"{failed} failed, p50 {statistics.median(during):.0f} ms, "
            f"p95 {during[int(len(during) * 0.95) - 1]:.0f} ms, "
            f"max {during[-1]:.0f} ms"
        )

        print("3. A hostile PDF, then a small file 3 s later (2 ingestion workers)")
        hostile = rectangles_pdf(1_000_000, pages=40)
        first = upload(port, writer.raw_key, "rectangles.pdf", hostile)
        time.sleep(3)
        small = upload(port, writer.raw_key, "note.txt", b"A short note.\n")
        status, waited = wait_ready(small["id"])
        print(
            f"   hostile PDF {len(hostile) / 1e6:.1f} MB; the small file was "
            f"{status} {waited:.1f} s after its upload"
        )
        status, took = wait_ready(first["id"])
        print(f"   the hostile PDF ended {status} after {took + waited + 3:.0f} s")
        reingest = f"http://127.0.0.1:{port}/api/channels/{SLUG}/documents/"
        statuses = []
        for _ in range(60):
            request = urllib.request.Request(
                f"{reingest}{first['id']}/reingest",
                b"",
                {"Authorization": f"Bearer {writer.raw_key}"},
                method="POST",
            )
            try:
                with urllib.request.urlopen(request) as response:
                    statuses.append(response.status)
            except urllib.error.HTTPError as error:
                statuses.append(error.code)
        queued = DBTaskResult.objects.filter(
            status__in=IN_FLIGHT, args_kwargs__args__0=first["id"]
        ).count()
        print(
            f"   60 re-ingest requests: {statuses.count(202)} accepted, "
            f"{queued} ingestion(s) queued or running"
        )

        print("4. A 100-page PDF sharing one noise image")
        noise = noise_image_pdf(pages=100, side=560)
        third = upload(port, writer.raw_key, "noise.pdf", noise)
        status, took = wait_ready(third["id"])
        storage = Path(env["QUIRE_DATA_DIR"]) / "media"
        image_bytes = sum(
            (storage / name).stat().st_size
            for name in Page.objects.filter(document_id=third["id"])
            .exclude(image="")
            .values_list("image", flat=True)
        )
        print(
            f"   input {len(noise) / 1e3:.0f} kB, {status} in {took:.0f} s; page "
            f"images {image_bytes / 1e6:.1f} MB = {image_bytes / len(noise):.1f} "
            "bytes per input byte"
        )

        print("5. Twelve parallel get_pages (type image, pages 1-10)")
        before = web_rss(web)
        peak = [before]
        done = threading.Event()

        def watch():
            while not done.is_set():
                peak.append(web_rss(web))
                time.sleep(0.05)

        watcher = threading.Thread(target=watch)
        watcher.start()

        def call(_):
            return stack.mcp_call(
                url,
                reader.raw_key,
                "tools/call",
                {
                    "name": "get_pages",
                    "arguments": {
                        "document_id": third["id"],
                        "page_start": 1,
                        "page_end": 10,
                        "type": "image",
                    },
                },
                timeout=120,
            )

        with ThreadPoolExecutor(12) as pool:
            replies = list(pool.map(call, range(12)))
        done.set()
        watcher.join()
        time.sleep(2)
        sizes = [len(json.dumps(reply)) for _, reply, _ in replies]
        errors = sum(
            1 for _, reply, _ in replies if reply.get("result", {}).get("isError")
        )
        print(
            f"   replies {min(sizes) / 1e6:.1f}-{max(sizes) / 1e6:.1f} MB "
            f"({errors} refused by the reply budget); largest web worker "
            f"{before / 1e6:.0f} MB before, peak {max(peak) / 1e6:.0f} MB, "
            f"{web_rss(web) / 1e6:.0f} MB 2 s after"
        )
        if errors:
            first_error = next(
                r for _, r, _ in replies if r.get("result", {}).get("isError")
            )
            print("   the tool said: " + first_error["result"]["content"][0]["text"])

        text_files(port, writer.raw_key)
        print("7. Forwarded headers from 127.0.0.1 (PROXY_TRUSTED_HOPS=0)")
        forwarded_headers(port)
    finally:
        for worker in workers:
            stack.stop(worker)
        stack.stop(web)
    return 0


if __name__ == "__main__":
    sys.exit(main())
