"""Access checks made from a request's headers, before its body is read.

Django's ASGI handler reads the whole body (spooling it to disk) before any
middleware or view runs, so a view's own key check comes after the upload has
cost bandwidth and disk. `QuireASGIHandler` first builds a body-less request
and asks the check for its path:

- /mcp/<slug>: origin, method, key, channel and rate limit
  (mcp_endpoint.views.check_before_body);
- /api/...: the key, channel and scope the route needs
  (documents.api.auth.check_before_body);
- anything else (the admin's uploads): a body over STAFF_BODY_BYTES needs a
  signed-in staff session.

A refusal is sent at once with `Connection: close`, so the unread body is never
received; an admission is left in the scope for the view, which then doesn't
check (or count) the request again.
"""

import io
import re

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import aget_user
from django.core.handlers.asgi import ASGIHandler
from django.db import InterfaceError, OperationalError, close_old_connections
from django.http import HttpResponse
from django.utils.module_loading import import_string

from documents.access import AccessDenied, Caller
from documents.api import auth as api_auth
from documents.models import MCP_PATH_PREFIX

ADMISSION_KEY = api_auth.ADMISSION_KEY
# Admin bodies larger than this (file uploads) need a staff session first;
# sign-in and ordinary form posts are far smaller.
STAFF_BODY_BYTES = 256 * 1024
_MCP_PATH = re.compile(rf"^{re.escape(MCP_PATH_PREFIX)}(?P<slug>[-a-zA-Z0-9_]+)/?$")


def _declared_length(scope: dict) -> int | None:
    """Content-Length, or -1 for a chunked body, or None for no body."""
    for name, value in scope.get("headers", []):
        name = name.lower()
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return -1
        if name == b"transfer-encoding":
            return -1
    return None


async def _mcp(request, slug: str) -> HttpResponse | Caller:
    if not settings.MCP_ENABLED:
        return None
    from mcp_endpoint import views

    return await views.check_before_body(request, slug)


async def _api(request) -> HttpResponse | Caller | None:
    outcome = await sync_to_async(api_auth.check_before_body)(request)
    if isinstance(outcome, AccessDenied):
        from project.api import access_denied_problem

        return access_denied_problem(outcome, request)
    return outcome


async def _staff(request, length: int) -> HttpResponse | None:
    if 0 <= length <= STAFF_BODY_BYTES:
        return None
    engine = import_string(settings.SESSION_ENGINE)
    request.session = engine.SessionStore(
        request.COOKIES.get(settings.SESSION_COOKIE_NAME)
    )
    user = await aget_user(request)
    if user.is_active and user.is_staff:
        return None
    return HttpResponse(
        "Sign in to the admin before uploading.",
        status=403,
        content_type="text/plain; charset=utf-8",
    )


async def check_before_body(handler: ASGIHandler, scope: dict):
    """The refusal to send for a request with a body, else None (an admission,
    if one was made, is left in the scope)."""
    length = _declared_length(scope)
    if length is None or length == 0:
        return None
    request, error = handler.create_request(scope, io.BytesIO())
    if request is None:
        return error
    path = request.path
    mcp = _MCP_PATH.match(path)
    if mcp is not None:
        outcome = await _mcp(request, mcp["slug"])
    elif path.startswith(api_auth.API_PREFIX):
        outcome = await _api(request)
    else:
        outcome = await _staff(request, length)
    if isinstance(outcome, Caller):
        scope[ADMISSION_KEY] = outcome
        return None
    return outcome


class QuireASGIHandler(ASGIHandler):
    """Django's ASGI handler, with the checks above before the body is read."""

    async def handle(self, scope, receive, send):
        # Django drops a broken connection when a request starts
        # (request_started); these checks query before that, so after a
        # PostgreSQL restart they would reuse the dead one forever.
        await sync_to_async(close_old_connections)()
        try:
            refusal = await check_before_body(self, scope)
        except (OperationalError, InterfaceError):
            # An outage: the view answers it (a retryable error in its protocol).
            refusal = None
        if refusal is None:
            return await super().handle(scope, receive, send)
        refusal["Connection"] = "close"
        try:
            await self.send_response(refusal, send)
        finally:
            await sync_to_async(close_old_connections)()
