"""An ASGI guard that refuses oversized request bodies before Django reads them.

Django's ASGI handler spools the whole body to a temporary file before any view
runs, so a view's own size check comes too late to spare the disk and the
bandwidth. This guard answers 413 as soon as the declared Content-Length, or
the bytes received so far, pass the limit of the route the path resolves to
(project.prechecks.BodyRule): MCP_MAX_BODY_BYTES for the MCP endpoint,
REQUEST_MAX_BYTES for uploads (REST and admin), SMALL_BODY_BYTES for sign-in
forms, routes that take no body and paths that match no route.
"""

import json

from documents.models import MCP_PATH_PREFIX as MCP_PREFIX
from mcp_endpoint.protocol.errors import BODY_TOO_LARGE as MCP_TOO_LARGE
from project.prechecks import body_rule, declared_length


class BodyTooLarge(Exception):
    pass


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
        limit: int | None = None
        declared = declared_length(scope)
        if declared is not None and declared > 0:
            limit = body_rule(scope).limit()
            if declared > limit:
                return await self._refuse(send, path, limit)
        received = 0
        started = False

        async def limited_receive():
            nonlocal received, limit
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received and limit is None:  # a body no header announced
                    limit = body_rule(scope).limit()
                if limit is not None and received > limit:
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
                await self._refuse(send, path, limit or 0)

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
