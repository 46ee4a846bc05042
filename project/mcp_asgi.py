"""The MCP endpoint's path through Django's ASGI handler, without what it doesn't use.

Django's `ASGIHandler.handle` spools every body into a temporary file, sends
`request_started` and `request_finished` through `sync_to_async` (a trip to the
request's thread each), and closes the response in a thread as well; the
pre-body checks (project.prechecks) built a request object of their own and made
a further trip to drop stale connections. For an MCP call those trips were most
of what a `tools/list` cost. Here a request to the MCP view gets:

- one request object, checked (Host, then mcp_endpoint.views.check_before_body:
  Origin, method, key, channel, rate limit, audit of refusals) before a body it
  announces is read, and refused with `Connection: close` as before (a request
  announcing none is checked by the view, once what came is read);
- the admission on the event loop, through its own async pool
  (documents.access.aadmit_pooled); when it needs the ORM (a refusal's audit,
  a new window, the write quota), for tokens and with the pool off, one trip
  to the request's thread, which drops a stale connection first and gives the
  connection back to the pool after (admit_released), as the two signals would;
- the body read into memory (project.body_limit has already bounded it by
  MCP_MAX_BODY_BYTES), then, for a POST, what the middleware does to it
  applied from the middleware's own hooks without walking the chain
  (project.middleware.MachineHooks: security headers, X-Frame-Options, CSP,
  Content-Length, an SSL redirect or a refused user agent when configured)
  around the view called directly with the route resolved before the body
  (any other method, or a MIDDLEWARE whose effect needs the chain, walks
  Django's chain as before); a 4xx or 5xx goes to django.request's log in
  the event loop, not through a thread; the view raced
  against the client's disconnect as Django does (closing the connection
  cancels the request), except for a method answered from cached bytes
  (tools/list, server/discover), which has no work to cancel and is sent
  without the listener task;
- after the response, a second trip only when the view's own sync code ran on
  the request's thread (its connection goes back to the pool there).

Every other path, and MCP with MCP_ENABLED off, takes Django's handler unchanged.
"""

import asyncio
import io

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.exceptions import RequestAborted, SuspiciousOperation
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.core.handlers.exception import response_for_exception
from django.db import InterfaceError, OperationalError, close_old_connections
from django.http import HttpResponse
from django.urls import ResolverMatch, set_script_prefix, set_urlconf
from django.utils.log import log_response

from documents.access import Caller, aadmit_pooled
from mcp_endpoint import views as mcp_views
from mcp_endpoint.protocol import peek_method
from mcp_endpoint.protocol.answers import CACHED_METHODS
from project.request_threads import REQUEST_THREAD_KEY

ADMISSION_KEY = mcp_views.ADMISSION_KEY


class _Processed(Exception):
    pass


async def _read_body(receive) -> bytes | None:
    """The whole body, or None when the client went away first."""
    parts: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(parts)


async def _refuse(handler: ASGIHandler, response: HttpResponse, send) -> None:
    response["Connection"] = "close"
    await handler.send_response(response, send)


async def handle_mcp(
    handler: ASGIHandler,
    scope: dict,
    receive,
    send,
    match: ResolverMatch,
    *,
    body_announced: bool,
) -> None:
    """Serve one request to the MCP view (see the module docstring);
    `body_announced`: its headers declare a body (Content-Length or chunked)."""
    set_script_prefix(get_script_prefix(scope))
    request, error = handler.create_request(scope, io.BytesIO())
    if request is None:
        await _refuse(handler, error, send)
        return
    thread = scope.get(REQUEST_THREAD_KEY)
    try:
        request.get_host()
    except SuspiciousOperation as exc:  # DisallowedHost: 400, as Django answers
        await _refuse(handler, response_for_exception(request, exc), send)
        return
    outcome = None
    if body_announced:  # none announced: the view checks it, as before
        try:
            outcome = await mcp_views.check_before_body(
                request, match.kwargs["channel_slug"], admit=aadmit_pooled
            )
        except (OperationalError, InterfaceError):
            # An outage: the view answers it (a retryable error in its protocol).
            outcome = None
    if isinstance(outcome, HttpResponse):
        await _refuse(handler, outcome, send)
        return
    if isinstance(outcome, Caller):
        scope[ADMISSION_KEY] = outcome
    calls_admitted = thread.calls if thread is not None else 0
    body = await _read_body(receive)
    if body is None:
        return
    request._body = body
    request._stream = io.BytesIO(body)
    response = None
    try:
        if _answered_from_memory(body):
            response = await _get_response(handler, request, match)
            if response.streaming:  # not expected; a stream still races
                await _raced(handler, receive, handler.send_response(response, send))
            else:
                await handler.send_response(response, send)
        else:
            answered: list[HttpResponse] = []
            await _raced(
                handler, receive, _respond(handler, request, match, send, answered)
            )
            response = answered[0] if answered else None
    finally:
        if response is not None:
            _close_resources(response)
        set_urlconf(None)
        if thread is None or thread.calls > calls_admitted:
            await sync_to_async(close_old_connections)()


def _answered_from_memory(body: bytes) -> bool:
    """One JSON-RPC request for a method answered from cached bytes
    (mcp_endpoint.protocol.answers.CACHED_METHODS): it does no work a closed
    connection could cancel, so it skips the race with the disconnect listener
    (a second task per call). Anything else, or a body that doesn't parse, races."""
    return peek_method(body) in CACHED_METHODS


async def _get_response(
    handler: ASGIHandler, request, match: ResolverMatch
) -> HttpResponse:
    """What handler.run_get_response gives, for a POST without the chain walk
    (the module docstring)."""
    hooks = handler.machine_hooks if request.method == "POST" else None
    if hooks is None:
        return await handler.run_get_response(request)
    set_urlconf(settings.ROOT_URLCONF)
    request.resolver_match = match
    response = await hooks.respond(request, match.func, match.args, match.kwargs)
    response._resource_closers.append(request.close)
    if response.status_code >= 400:
        log_response(
            "%s: %s",
            response.reason_phrase,
            request.path,
            response=response,
            request=request,
        )
    response._handler_class = handler.__class__
    return response


async def _respond(
    handler: ASGIHandler, request, match: ResolverMatch, send, answered: list
) -> None:
    response = await _get_response(handler, request, match)
    answered.append(response)  # closed by the caller, even when the send aborts
    await handler.send_response(response, send)


async def _raced(handler: ASGIHandler, receive, work) -> None:
    """`work` raced against the client's disconnect, as Django's handler does:
    closing the connection cancels the request (MCP transport rule)."""
    try:
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(handler.listen_for_disconnect(receive))
                await work
                raise _Processed
        except* (_Processed, RequestAborted):
            pass
    except BaseExceptionGroup as group_error:
        if len(group_error.exceptions) == 1:
            raise group_error.exceptions[0] from None
        raise


def _close_resources(response: HttpResponse) -> None:
    """What `response.close()` does but the `request_finished` signal: the
    connection is given back above, in the thread that holds it."""
    for closer in response._resource_closers:
        try:
            closer()
        except Exception:  # noqa: BLE001, S110 - as HttpResponseBase.close
            pass
    response._resource_closers.clear()
    response.closed = True
