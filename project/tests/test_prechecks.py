"""Requests refused from their headers, before the body is read (issue 11 item 7).

These drive project.asgi's handler as uvicorn does, with a `receive` that
counts the body bytes the application asked for.
"""

import asyncio
import json

import pytest
from asgiref.sync import async_to_sync
from django.db import OperationalError, connection

from documents.access import COMMAND_LINE
from documents.models import RateLimitWindow
from documents.services.keys import create_api_key
from mcp_endpoint import views
from project.prechecks import QuireASGIHandler

pytestmark = pytest.mark.django_db(transaction=True)
HUGE = 200 * 1024 * 1024


class Upload:
    """An ASGI conversation: a POST declaring `length` bytes, sent in 64 kB
    pieces as the server asks for them."""

    def __init__(
        self,
        path: str,
        headers: dict[str, str],
        length: int = HUGE,
        method: str = "POST",
    ):
        self.path, self.length, self.method = path, length, method
        self.headers = [(b"content-length", str(length).encode())] + [
            (name.lower().encode(), value.encode()) for name, value in headers.items()
        ]
        self.body_read = 0
        self.messages: list[dict] = []

    def scope(self) -> dict:
        return {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": self.method,
            "scheme": "http",
            "path": self.path,
            "raw_path": self.path.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": [(b"host", b"127.0.0.1"), *self.headers],
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8000),
        }

    async def receive(self) -> dict:
        piece = min(64 * 1024, self.length - self.body_read)
        self.body_read += piece
        return {
            "type": "http.request",
            "body": b"x" * piece,
            "more_body": self.body_read < self.length,
        }

    async def send(self, message: dict) -> None:
        self.messages.append(message)

    def run(self) -> tuple[int, dict[bytes, bytes], bytes]:
        async_to_sync(QuireASGIHandler())(self.scope(), self.receive, self.send)
        start = self.messages[0]
        body = b"".join(m.get("body", b"") for m in self.messages[1:])
        return start["status"], dict(start["headers"]), body


@pytest.fixture
def keys(make_channel):
    channel = make_channel("demo")
    read = create_api_key(actor=COMMAND_LINE, name="agent", channels=[channel])
    write = create_api_key(
        actor=COMMAND_LINE, name="uploader", channels=[channel], scopes=["write"]
    )
    return read.raw_key, write.raw_key


@pytest.mark.parametrize(
    "headers, status",
    [
        ({}, 401),
        ({"Authorization": "Bearer qk_unknown-key-of-some-length"}, 401),
        ("read", 403),
    ],
)
def test_rest_uploads_are_refused_before_the_body(keys, headers, status):
    """A 200 MB upload without a key, with an unknown key or with a read-only
    key is answered from its headers: not one body byte is read, and the
    connection is closed."""
    if headers == "read":
        headers = {"Authorization": f"Bearer {keys[0]}"}
    upload = Upload(
        "/api/channels/demo/documents",
        {"Content-Type": "multipart/form-data; boundary=x", **headers},
    )
    answered, response_headers, body = upload.run()
    assert answered == status
    assert upload.body_read == 0
    assert response_headers[b"Connection"] == b"close"
    assert json.loads(body)["status"] == status


@pytest.mark.parametrize("key", [None, "read"])
def test_new_files_of_documents_are_refused_before_the_body(keys, key):
    """PUT of a document's new file needs the write scope, checked from the
    headers like an upload: nothing of a 200 MB body is read."""
    headers = {"Content-Type": "multipart/form-data; boundary=x"}
    if key == "read":
        headers["Authorization"] = f"Bearer {keys[0]}"
    upload = Upload("/api/channels/demo/documents/1/file", headers, method="PUT")
    answered, response_headers, _ = upload.run()
    assert answered == (403 if key else 401)
    assert upload.body_read == 0
    assert response_headers[b"Connection"] == b"close"


def test_mcp_calls_are_refused_before_the_body(keys):
    """The same for the MCP endpoint: a missing key is a 401 with a Bearer
    challenge, and the body is never read."""
    upload = Upload(
        "/mcp/demo", {"Content-Type": "application/json"}, length=900 * 1024
    )
    answered, headers, body = upload.run()
    assert answered == 401
    assert upload.body_read == 0
    assert headers[b"WWW-Authenticate"].startswith(b"Bearer")
    assert json.loads(body)["error"]["code"] == -32001


PING = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()


def mcp_headers(key: str) -> dict:
    """The headers of an MCP call to the demo channel with `key`."""
    return {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "MCP-Protocol-Version": "2025-11-25",
        "Authorization": f"Bearer {key}",
    }


class Ping(Upload):
    """An MCP ping with `key`, its body sent once the server asks for it."""

    def __init__(self, key: str):
        super().__init__(
            "/mcp/demo",
            mcp_headers(key),
            length=len(PING),
        )

    async def receive(self):
        if self.body_read:  # the client waits; the handler listens for that
            await asyncio.sleep(3600)
        self.body_read = len(PING)
        return {"type": "http.request", "body": PING, "more_body": False}


def test_admitted_requests_are_read_and_counted_once(keys):
    """A key that may do what it asks gets its body read, and its request is
    counted once (the view uses the admission made before the body)."""
    ping = Ping(keys[0])
    answered, _, body = ping.run()
    assert answered == 200, body
    assert json.loads(body)["result"] == {}
    assert ping.body_read == len(PING)
    assert sum(RateLimitWindow.objects.values_list("count", flat=True)) == 1


def test_large_admin_uploads_need_a_staff_session(db):
    """An admin upload over 256 kB without a staff session is refused before
    its body is read; sign-in forms are small enough to pass."""
    upload = Upload(
        "/admin/documents/document/upload/",
        {"Content-Type": "multipart/form-data; boundary=x"},
    )
    answered, _, _ = upload.run()
    assert answered == 403
    assert upload.body_read == 0


def test_checks_after_a_database_restart_use_a_new_connection(keys):
    """A connection PostgreSQL dropped (a restart) is not reused by the checks
    made before the body: the next call is answered normally."""
    connection.ensure_connection()
    connection.connection.close()
    answered, _, body = Ping(keys[0]).run()
    assert answered == 200, body
    assert json.loads(body)["result"] == {}


def test_a_database_outage_during_the_checks_is_a_json_rpc_error(keys, monkeypatch):
    """When the database fails during the checks, the client gets the MCP
    view's retryable JSON-RPC error, not a bare 500."""

    async def unavailable(request, slug, **options):
        raise OperationalError("the connection is closed")

    monkeypatch.setattr(views, "check_before_body", unavailable)
    answered, headers, body = Ping(keys[0]).run()
    assert answered == 503
    assert b"Retry-After" in headers
    assert json.loads(body)["error"]["code"] == -32603


def run_application(upload: Upload, scope: dict | None = None):
    """`upload` through the whole ASGI application (body limits included)."""
    from project.asgi import application

    async_to_sync(application)(scope or upload.scope(), upload.receive, upload.send)
    start = upload.messages[0]
    body = b"".join(m.get("body", b"") for m in upload.messages[1:])
    return start["status"], dict(start["headers"]), body


@pytest.mark.parametrize(
    "path",
    [
        "/api/nope",
        "/api/channels",
        "/api//channels/demo/documents",
        "/api/channels/al pha/documents",
        "/api/channels/demo/nope",
        "/nope",
        "/oauth/token/",
        "/signin/login/",
        "/citations/x",
    ],
)
def test_bodies_on_paths_naming_no_channel_are_refused_before_they_are_read(keys, path):
    """Finding 3: a 200 MB body without a key on an /api/ path that names no
    channel (or a malformed one), or on any path that takes no large body, is
    answered from its headers: not one body byte is read."""
    upload = Upload(path, {"Content-Type": "multipart/form-data; boundary=x"})
    answered, _, _ = run_application(upload)
    assert answered in {401, 404, 405, 413}
    assert upload.body_read == 0


def test_a_malformed_channel_name_is_not_found_before_the_body(keys):
    """With a valid key, `/api/channels/al%20pha/documents` is a 404 (no channel
    can have that name) before the body is read; without one, a 401."""
    headers = {"Content-Type": "multipart/form-data; boundary=x"}
    signed = Upload(
        "/api/channels/al pha/documents",
        {**headers, "Authorization": f"Bearer {keys[1]}"},
    )
    assert run_application(signed)[0] == 404
    assert signed.body_read == 0
    anonymous = Upload("/api/channels/al pha/documents", headers)
    assert run_application(anonymous)[0] == 401
    assert anonymous.body_read == 0


@pytest.mark.parametrize(
    "path", ["/api/channels/demo/documents", "/mcp/demo", "/oauth/register/"]
)
def test_an_unknown_host_is_a_400_before_any_check(keys, path):
    """A body for a host outside ALLOWED_HOSTS is answered 400 (as Django does),
    not a 500 from building the challenge's URL, and the body is not read."""
    upload = Upload(path, {"Content-Type": "application/json"}, length=1000)
    scope = upload.scope()
    scope["headers"] = [(b"host", b"evil.example"), *upload.headers]
    answered, _, _ = run_application(upload, scope)
    assert answered == 400
    assert upload.body_read == 0


class HangUp(Upload):
    """An MCP call whose client closes the connection right after its body."""

    def __init__(self, key: str, message: dict):
        self.message = json.dumps(message).encode()
        super().__init__(
            "/mcp/demo",
            mcp_headers(key),
            length=len(self.message),
        )

    async def receive(self):
        if self.body_read:
            return {"type": "http.disconnect"}
        self.body_read = len(self.message)
        return {"type": "http.request", "body": self.message, "more_body": False}


def test_a_closed_connection_cancels_a_tool_call(keys):
    """Closing the connection cancels the request (MCP transport rule): a tool
    call still races the client's disconnect, so nothing is sent."""
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "list_documents", "arguments": {}},
    }
    from project.asgi import application

    hang_up = HangUp(keys[0], call)
    async_to_sync(application)(hang_up.scope(), hang_up.receive, hang_up.send)
    assert hang_up.messages == []


def test_cached_answers_skip_the_disconnect_race(keys):
    """tools/list is answered from cached bytes with no work to cancel, so it is
    sent without racing a disconnect listener: the same answer as with one."""
    listing = {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}}
    status, headers, body = run_application(HangUp(keys[0], listing))
    assert status == 200, body
    answer = json.loads(body)
    assert answer["id"] == 7
    assert {tool["name"] for tool in answer["result"]["tools"]} >= {"list_documents"}
    assert headers[b"Content-Type"] == b"application/json"


def test_mcp_routes_are_resolved_once_per_path_and_resolver(settings):
    """An MCP path's route is kept for the URL resolver it came from: the same
    match again, a fresh one once the URL caches are cleared; other paths are
    resolved every time, and the kept routes are bounded."""
    from django.urls import clear_url_caches

    from project import prechecks

    first = prechecks.route_match("/mcp/handbook")
    assert first.func is views.mcp and first.kwargs == {"channel_slug": "handbook"}
    assert prechecks.route_match("/mcp/handbook") is first
    assert prechecks.route_match("/mcp/other").kwargs == {"channel_slug": "other"}
    assert prechecks.route_match("/") is not prechecks.route_match("/")
    assert prechecks.route_match("/nowhere/at/all") is None
    clear_url_caches()
    fresh = prechecks.route_match("/mcp/handbook")
    assert fresh is not first and fresh.func is views.mcp
    for index in range(prechecks.MCP_ROUTES_MAX + 5):
        prechecks.route_match(f"/mcp/slug-{index}")
    assert len(prechecks._mcp_routes) <= prechecks.MCP_ROUTES_MAX
