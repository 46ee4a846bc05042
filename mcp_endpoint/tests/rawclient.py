"""A test client that posts exact bytes with exact header lines (duplicates kept),
and a checker that every answer of the endpoint is well formed."""

import asyncio
import json

from asgiref.sync import async_to_sync
from django.test import AsyncClient
from django.test.client import FakePayload

from project.asgi import application

JSON_RPC_STATUSES = {200, 400, 401, 403, 404, 406, 413, 415, 429}


class RawClient:
    """Sends one request as given: raw body bytes and a list of header lines.

    Django's test client folds headers into a dict; MCP routing headers must be
    rejected when duplicated, so this builds the ASGI scope itself.
    """

    def __init__(self):
        self.client = AsyncClient()

    def send(
        self,
        path: str,
        body: bytes,
        headers: list[tuple[str, str]],
        *,
        method: str = "POST",
    ):
        scope = {
            "method": method,
            "path": path,
            "query_string": "",
            "headers": [(b"host", b"testserver")]
            + [
                (name.lower().encode("latin-1"), value.encode("utf-8", "surrogatepass"))
                for name, value in headers
            ],
            "_body_file": FakePayload(body),
        }

        async def request():
            response = await self.client.request(**scope)
            if response.streaming:
                response.stream_body = b"".join(
                    [chunk async for chunk in response.streaming_content]
                )
            else:
                response.stream_body = response.content
            return response

        return async_to_sync(request)()


def sse_messages(body: bytes) -> list[dict]:
    """The JSON-RPC messages of an SSE body (comment lines skipped)."""
    messages = []
    for event in body.decode().split("\n\n"):
        data = [line[5:].strip() for line in event.splitlines() if line[:5] == "data:"]
        if data:
            messages.append(json.loads("\n".join(data)))
    return messages


def check_reply(
    response, request_id=None, *, http_method: str = "POST", check_id: bool = True
) -> dict | None:
    """Assert the answer is what the transport promises; return its JSON-RPC message.

    Never a 5xx; 405 (empty, Allow: POST) for other HTTP methods unless the
    Origin was refused first (403); 202 with an
    empty body for accepted notifications; otherwise one JSON-RPC response
    (JSON, or SSE whose last message is the response) with either a result
    object or an error {code: int, message: str}, no traceback, and the
    request's id echoed with its type (or null; `check_id` False when the body
    sent was not the message whose id is given).
    """
    status = response.status_code
    assert status < 500, (status, response.stream_body[:500])
    if http_method != "POST" and status != 403:  # Origin is checked first
        assert status == 405 and response["Allow"] == "POST"
        assert response.stream_body == b""
        return None
    if status == 202:
        assert response.stream_body == b""
        return None
    assert status in JSON_RPC_STATUSES, (status, response.stream_body[:500])
    content_type = response["Content-Type"]
    if content_type.startswith("text/event-stream"):
        messages = sse_messages(response.stream_body)
        assert messages, response.stream_body[:500]
        message = messages[-1]
    else:
        assert content_type == "application/json", content_type
        message = json.loads(response.stream_body)
    assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", message
    assert ("result" in message) != ("error" in message), message
    assert "id" in message
    if "error" in message:
        error = message["error"]
        assert isinstance(error.get("code"), int), error
        assert not isinstance(error["code"], bool)
        assert isinstance(error.get("message"), str) and error["message"], error
        assert "Traceback" not in error["message"]
    else:
        assert status == 200
        assert isinstance(message["result"], dict), message
    answered = message["id"]
    assert (
        answered is None
        or not check_id
        or (answered == request_id and type(answered) is type(request_id))
    ), (answered, request_id)
    assert b"Traceback (most recent call last)" not in response.stream_body
    return message


class AsgiResponse:
    def __init__(self, status: int, headers: dict[bytes, bytes], body: bytes, read):
        self.status_code, self.headers, self.content = status, headers, body
        self.body_read = read

    def __repr__(self) -> str:
        return f"<{self.status_code} {self.content[:300]!r}>"


class AsgiClient:
    """Sends one request through Quire's whole ASGI application (body limits,
    the before-body checks, Django), as uvicorn hands it over: exact header
    lines, any Host, any Content-Length (or none), the body in 64 kB pieces;
    and says how many body bytes the application asked for."""

    def send(
        self,
        method: str,
        path: str,
        body: bytes = b"",
        headers: list[tuple[str, str]] = (),
        *,
        query: str = "",
        host: str = "127.0.0.1",
        content_length: str | None = "auto",
    ) -> AsgiResponse:
        lines = [(b"host", host.encode("latin-1"))]
        if content_length == "auto":
            content_length = str(len(body)) if body else None
        if content_length is not None:
            lines.append((b"content-length", content_length.encode()))
        lines += [
            (name.lower().encode("latin-1"), value.encode("utf-8", "surrogatepass"))
            for name, value in headers
        ]
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode("utf-8", "surrogatepass"),
            "query_string": query.encode("utf-8", "surrogatepass"),
            "root_path": "",
            "headers": lines,
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8000),
        }
        pieces = [body[i : i + 65536] for i in range(0, len(body), 65536)] or [b""]
        read, sent = 0, []

        async def receive():
            nonlocal read
            if not pieces:  # the client waits for the answer; Django listens
                await asyncio.sleep(3600)
            piece = pieces.pop(0)
            read += len(piece)
            return {"type": "http.request", "body": piece, "more_body": bool(pieces)}

        async def send(message):
            sent.append(message)

        async_to_sync(application)(scope, receive, send)
        start = next(m for m in sent if m["type"] == "http.response.start")
        content = b"".join(
            m.get("body", b"") for m in sent if m["type"] == "http.response.body"
        )
        return AsgiResponse(start["status"], dict(start["headers"]), content, read)
