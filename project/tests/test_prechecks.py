"""Requests refused from their headers, before the body is read (issue 11 item 7).

These drive project.asgi's handler as uvicorn does, with a `receive` that
counts the body bytes the application asked for.
"""

import asyncio
import json

import pytest
from asgiref.sync import async_to_sync

from documents.access import COMMAND_LINE
from documents.models import RateLimitWindow
from documents.services.keys import create_api_key
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


def test_admitted_requests_are_read_and_counted_once(keys):
    """A key that may do what it asks gets its body read, and its request is
    counted once (the view uses the admission made before the body)."""
    message = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()

    class Ping(Upload):
        async def receive(self):
            if self.body_read:  # the client waits; the handler listens for that
                await asyncio.sleep(3600)
            self.body_read = len(message)
            return {"type": "http.request", "body": message, "more_body": False}

    ping = Ping(
        "/mcp/demo",
        {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "MCP-Protocol-Version": "2025-11-25",
            "Authorization": f"Bearer {keys[0]}",
        },
        length=len(message),
    )
    answered, _, body = ping.run()
    assert answered == 200, body
    assert json.loads(body)["result"] == {}
    assert ping.body_read == len(message)
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
