"""Real servers the source and sync tests talk to: moto's S3 server on
127.0.0.1 that records every request it answers, and a small website
(http.server) whose pages the tests change between listings."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from moto.server import ThreadedMotoServer
from werkzeug.serving import make_server

Body = bytes | Callable[[], Iterator[bytes]]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class RecordingMotoServer(ThreadedMotoServer):
    """moto's threaded server, keeping (method, path, query) of every request
    it receives, so a test can assert what reached the S3 server rather than
    what the client meant to send."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.requests: list[tuple[str, str, str]] = []
        # Called with (method, path, query) before a request is answered.
        self.before: Callable[[str, str, str], None] | None = None

    def _server_entry(self) -> None:
        app = DomainDispatcherApplication(create_backend_app)

        def recording(environ, start_response):
            request = (
                environ["REQUEST_METHOD"],
                environ.get("PATH_INFO", ""),
                environ.get("QUERY_STRING", ""),
            )
            self.requests.append(request)
            if self.before is not None:
                self.before(*request)
            return app(environ, start_response)

        self._server = make_server(
            self._ip_address,
            self._port,
            recording,
            True,
            request_handler=MotoRequestHandler,
        )
        self._server_ready_event.set()
        self._server.serve_forever()

    def object_reads(self, bucket: str) -> list[str]:
        """Paths of the GETs of objects (not listings) of ``bucket``."""
        return [
            path
            for method, path, query in self.requests
            if method == "GET"
            and path.startswith(f"/{bucket}/")
            and path != f"/{bucket}/"
            and "list-type" not in query
        ]


class Site:
    """What the server answers, changed by the tests between listings, and
    every request it received (path, Host header)."""

    def __init__(self) -> None:
        self.pages: dict[str, tuple[int, dict[str, str], Body]] = {}
        self.requests: list[tuple[str, str]] = []
        self.if_none_match: list[str] = []
        self.sent = 0
        # Once this path has been answered, the site is gone: every later
        # request is dropped unanswered, as by a server that stopped.
        self.gone_after: str | None = None
        self.gone = False
        # Paths whose answer waits for their event, and the event set when
        # such a path was asked for.
        self.held: dict[str, threading.Event] = {}
        self.reached = threading.Event()

    def hold(self, path: str) -> threading.Event:
        """Make ``path`` wait to be answered until the returned event is set."""
        release = threading.Event()
        self.held[path] = release
        return release

    def page(self, path: str, html: str, **headers: str) -> None:
        headers = {"Content-Type": "text/html; charset=utf-8", **headers}
        self.pages[path] = (200, headers, html.encode())

    def redirect(self, path: str, location: str) -> None:
        self.pages[path] = (302, {"Location": location}, b"")

    def paths(self, prefix: str = "/") -> list[str]:
        return [path for path, _ in self.requests if path.startswith(prefix)]


def handler_for(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            site.requests.append((self.path, self.headers.get("Host", "")))
            if site.gone:
                self.close_connection = True
                return
            site.gone = self.path == site.gone_after
            release = site.held.get(self.path)
            if release is not None:
                site.reached.set()
                release.wait(60)
            if self.headers.get("If-None-Match"):
                site.if_none_match.append(self.headers["If-None-Match"])
            status, headers, body = site.pages.get(
                self.path, (404, {"Content-Type": "text/plain"}, b"no")
            )
            if self.path.startswith("/calendar/"):
                day = int(self.path.rsplit("/", 1)[-1])
                status, headers = 200, {"Content-Type": "text/html"}
                body = f'<a href="/calendar/{day + 1}">next</a>'.encode()
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            if isinstance(body, bytes):
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            self.end_headers()
            try:
                for chunk in body():
                    self.wfile.write(chunk)
                    site.sent += len(chunk)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, *args: object) -> None:
            pass

    return Handler


def serve(server) -> threading.Thread:
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return thread
