"""A real uvicorn server with Quire's HTTP protocol (project.http_guard): slow
clients are cut off, connections are capped per client address, and keys in
URLs never reach the access log (issue 11, items 7 and 10)."""

import secrets
import socket
import subprocess
import time

import httpx
import pytest

from demo.web import uvicorn_command
from mcp_endpoint.tests.live import REPO, free_port, server_environment, stop_server

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
HEADER_TIMEOUT = 1.5
PER_CLIENT = 20


@pytest.fixture
def guarded_server(tmp_path):
    env = server_environment(tmp_path / "media", "")
    env.update(
        HTTP_HEADER_TIMEOUT=str(HEADER_TIMEOUT),
        HTTP_BODY_TIMEOUT="1",
        HTTP_MAX_CONNECTIONS_PER_CLIENT=str(PER_CLIENT),
    )
    port = free_port()
    log = tmp_path / "uvicorn.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            uvicorn_command(port=port),
            cwd=REPO,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base_url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(f"{base_url}/admin/login/", timeout=2)
            break
        except httpx.HTTPError:
            if time.monotonic() > deadline or process.poll() is not None:
                stop_server(process)
                raise RuntimeError(log.read_text()) from None
            time.sleep(0.3)
    yield port, log
    stop_server(process)


def closed_after(sock: socket.socket, limit: float = 10.0) -> float:
    """Seconds until the server closes `sock` (reads and drops what it sends)."""
    started = time.monotonic()
    sock.settimeout(limit)
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        return limit
    except ConnectionResetError:
        pass
    return time.monotonic() - started


def connect(port: int, source: str = "127.0.0.1") -> socket.socket:
    sock = socket.socket()
    sock.bind((source, 0))
    sock.connect(("127.0.0.1", port))
    return sock


def test_slow_headers_and_bodies_are_cut_off(guarded_server):
    """A client that never finishes its headers, or its body, is disconnected
    after the deadline instead of holding the connection."""
    port, _ = guarded_server
    headers = connect(port)
    headers.sendall(b"GET /admin/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    assert closed_after(headers) < HEADER_TIMEOUT + 2
    body = connect(port)
    body.sendall(
        b"POST /admin/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/x-www-form-urlencoded\r\n"
        b"Content-Length: 1000\r\n\r\nusername=a"
    )
    assert closed_after(body) < 1 + 2


def test_connections_are_capped_per_client_address(guarded_server):
    """Past HTTP_MAX_CONNECTIONS_PER_CLIENT idle sockets from one address, new
    ones from it are closed at once, while another address is served."""
    port, _ = guarded_server
    held = [connect(port) for _ in range(PER_CLIENT)]
    time.sleep(0.2)
    extra = connect(port)
    assert closed_after(extra, limit=HEADER_TIMEOUT) < HEADER_TIMEOUT / 2
    other = connect(port, source="127.0.0.2")
    other.sendall(b"GET /admin/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    other.settimeout(5)
    assert other.recv(100).startswith(b"HTTP/1.1 200")
    for sock in [*held, extra, other]:
        sock.close()


def test_keys_in_urls_never_reach_the_access_log(guarded_server):
    """Item 10: a key sent in a query string (as a careless client might) is
    redacted from uvicorn's access log line."""
    port, log = guarded_server
    key = "qk_" + secrets.token_urlsafe(32)
    response = httpx.get(f"http://127.0.0.1:{port}/api/channels?api_key={key}")
    assert response.status_code == 401
    time.sleep(0.3)
    text = log.read_text()
    assert "/api/channels?api_key=[redacted]" in text
    assert key not in text and key[10:] not in text
