"""An ASGI guard that refuses oversized request bodies before Django reads them.

Django's ASGI handler spools the whole body to a temporary file before any view
runs, so a view's own size check comes too late to spare the disk and the
bandwidth. This guard answers 413 as soon as the declared Content-Length, or
the bytes received so far, pass the limit of the path: MCP_MAX_BODY_BYTES for
the MCP endpoint, REQUEST_MAX_BYTES for everything else (uploads).
"""

import json

from django.conf import settings

from documents.models import MCP_PATH_PREFIX as MCP_PREFIX
from mcp_endpoint.protocol.errors import BODY_TOO_LARGE as MCP_TOO_LARGE


class BodyTooLarge(Exception):
    pass


def body_limit(path: str) -> int:
    """The largest body accepted on `path`, in bytes."""
    if path.startswith(MCP_PREFIX):
        return settings.MCP_MAX_BODY_BYTES
    return settings.REQUEST_MAX_BYTES


def _declared_length(scope: dict) -> int | None:
    for name, value in scope.get("headers", []):
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _refusal(path: str, limit: int) -> tuple[bytes, bytes]:
    message = f"The body is larger than {limit} bytes."
    if path.startswith(MCP_PREFIX):
        body = {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": MCP_TOO_LARGE, "message": message},
        }
        return json.dumps(body).encode(), b"application/json"
    problem = {"title": "Request body too large", "status": 413, "detail": message}
    return json.dumps(problem).encode(), b"application/problem+json"


class BodyLimitMiddleware:
    """Wraps the ASGI application; see the module docstring."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope.get("path", "")
        limit = body_limit(path)
        declared = _declared_length(scope)
        if declared is not None and declared > limit:
            return await self._refuse(send, path, limit)
        received = 0
        started = False

        async def limited_receive():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge
            return message

        async def tracking_send(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except BodyTooLarge:
            if not started:
                await self._refuse(send, path, limit)

    @staticmethod
    async def _refuse(send, path: str, limit: int) -> None:
        body, content_type = _refusal(path, limit)
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", content_type),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
