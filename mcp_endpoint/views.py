"""HTTP transport of the MCP endpoint (stateless Streamable HTTP).

Access checks come first (Origin, method, key, rate limit, size), then the
JSON-RPC message goes to `protocol.handle_post`. Answers are JSON, or SSE when
a tool call emits notifications and the client accepts `text/event-stream`
(only a tool call can: protocol.may_notify).
"""

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import (
    HttpRequest,
    HttpResponse,
    JsonResponse,
    StreamingHttpResponse,
)
from django.views.decorators.csrf import csrf_exempt

from documents.access import (
    AccessDenied,
    Caller,
    aadmit,
    client_address,
    credential_from,
)
from documents.telemetry import metrics
from mcp_endpoint import auth, protocol
from mcp_endpoint.protocol.errors import (
    BODY_TOO_LARGE,
    DATABASE_UNAVAILABLE,
    FORBIDDEN,
    INTERNAL_ERROR,
    INVALID_REQUEST,
    RATE_LIMITED,
    UNAUTHORIZED,
)
from mcp_endpoint.protocol.methods import METHODS
from mcp_endpoint.registry import registry

logger = logging.getLogger("mcp_endpoint")

SSE_PING_SECONDS = 15
# Where project.asgi leaves the caller it admitted before reading the body.
ADMISSION_KEY = "quire.admission"
ADMISSION_TIMES_KEY = "quire.admission_ns"
# Where check_before_body leaves the outage an admission met, so that the view
# answers it instead of trying again and waiting for the database a second time.
OUTAGE_KEY = "quire.admission_outage"
RETRY_SECONDS = "5"


def _refusal(status: int, code: int, message: str, **headers: str) -> JsonResponse:
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    response = JsonResponse(body, status=status)
    for name, value in headers.items():
        response[name.replace("_", "-")] = value
    return response


def _accepts(accept: str, media_type: str) -> bool:
    kind = media_type.split("/")[0]
    for item in accept.split(","):
        value = item.split(";")[0].strip().lower()
        if value in (media_type, f"{kind}/*", "*/*"):
            return True
    return False


def _raw_headers(request: HttpRequest) -> list[tuple[str, str]]:
    """Header lines as sent (lower-case names, duplicates kept)."""
    scope = getattr(request, "scope", None)
    if scope is not None:
        return [
            (name.decode("latin-1").lower(), value.decode("latin-1").strip())
            for name, value in scope.get("headers", [])
        ]
    return [(name.lower(), value.strip()) for name, value in request.headers.items()]


def _sse_frame(message: dict) -> bytes:
    return f"event: message\ndata: {json.dumps(message)}\n\n".encode()


class CallLog:
    """The one log line per call, for a person reading the terminal: method,
    tool, channel, status, outcome, milliseconds and the caller's prefix (the
    access log and django.request leave MCP requests to it: project.logs); and
    the call counted in the metrics (documents.telemetry)."""

    def __init__(self, channel: str):
        self.started = time.monotonic()
        self.started_ns = time.time_ns()
        self.channel = channel
        self.channel_exists = False  # an unknown slug is no metric label
        self.key = ""  # the stored prefix, never the key
        self.method = ""
        self.tool = ""
        self.trace: dict[str, str] = {}

    def took(self, reply: protocol.Reply) -> None:
        """What the answered request was: its method, tool and trace context."""
        self.method, self.tool, self.trace = reply.method, reply.tool, reply.trace

    def write(self, status: int, outcome: str) -> None:
        seconds = time.monotonic() - self.started
        metrics.observe_call(
            method=metrics.bounded(self.method, METHODS, empty="-"),
            tool=metrics.bounded(self.tool, registry.tool_names(), empty="-"),
            channel=self.channel if self.channel_exists else metrics.NO_CHANNEL,
            outcome=outcome,
            seconds=seconds,
        )
        if not logger.isEnabledFor(logging.INFO):
            return
        # Quoted as JSON strings: tracestate and baggage may hold spaces.
        trace = "".join(
            f" {key}={json.dumps(value)}" for key, value in self.trace.items()
        )
        # Built as one string: the log's redaction filter (project.logs) then
        # scans one argument instead of eight, the costliest part of the line.
        logger.info(
            "%s",
            f"mcp method={self.method or '-'} tool={self.tool or '-'} "
            f"channel={self.channel} status={status} outcome={outcome} "
            f"ms={seconds * 1000:.1f} caller={self.key or '-'}{trace}",
        )


def refusal_for(
    exc: AccessDenied, request: HttpRequest, channel_slug: str
) -> JsonResponse:
    """The transport-level answer to a refused credential, as MCP clients expect
    it: 401 with a WWW-Authenticate challenge pointing at the channel's
    protected-resource metadata (RFC 9728), 403 naming a missing scope, 429
    with Retry-After."""
    if exc.status == 429:
        return _refusal(
            429, RATE_LIMITED, str(exc), Retry_After=str(exc.retry_after or 1)
        )
    headers = {}
    if exc.status == 401 or exc.missing_scope:
        headers["WWW_Authenticate"] = auth.bearer_challenge(request, channel_slug, exc)
    code = UNAUTHORIZED if exc.status == 401 else FORBIDDEN
    return _refusal(exc.status, code, str(exc), **headers)


def _outcome(response: HttpResponse, outcome: str) -> HttpResponse:
    response.quire_outcome = outcome
    return response


async def check_before_body(
    request: HttpRequest,
    channel_slug: str,
    *,
    admit: Callable[..., Awaitable[Caller]] | None = None,
) -> Caller | HttpResponse:
    """Origin, method, key, channel and rate limit, from the headers alone:
    the admitted caller, or the response that refuses the request. The ASGI handler
    (project.mcp_asgi) calls this before the body is read, with an `admit` that
    also manages the request's connection; the view otherwise."""
    origin = request.headers.get("Origin")
    if origin and not auth.origin_allowed(origin):
        return _outcome(
            _refusal(403, FORBIDDEN, "Origin not allowed"), "origin refused"
        )
    if request.method != "POST":
        response = HttpResponse(status=405)
        response["Allow"] = "POST"
        return _outcome(response, "method refused")
    scope = getattr(request, "scope", None)
    if scope is not None and OUTAGE_KEY in scope:
        # The admission before the body found PostgreSQL down: once is enough.
        raise scope[OUTAGE_KEY]
    admission_started = time.time_ns()
    try:
        caller = await (admit or aadmit)(
            channel_slug,
            credential_from(request),
            via="mcp",
            address=client_address(request),
            resource=auth.resource_url(request, channel_slug),
        )
        if scope is not None:  # for the request's trace span
            scope[ADMISSION_TIMES_KEY] = (admission_started, time.time_ns())
    except (OperationalError, InterfaceError) as exc:
        if scope is not None:
            scope[OUTAGE_KEY] = exc
        raise
    except AccessDenied as exc:
        outcome = "rate limited" if exc.status == 429 else f"key refused ({exc.status})"
        return _outcome(refusal_for(exc, request, channel_slug), outcome)
    if caller.channel is None:  # told only to a valid key: names can't be probed
        return _outcome(_refusal(404, INVALID_REQUEST, "No channel here"), "no channel")
    return caller


@csrf_exempt
async def mcp(request: HttpRequest, channel_slug: str) -> HttpResponse:
    """POST /mcp/<channel>: one JSON-RPC message in, one answer out."""
    log = CallLog(channel_slug)
    try:
        response, outcome = await _serve(request, channel_slug, log)
    except (OperationalError, InterfaceError):
        # An outage or restart of PostgreSQL: transient, so say when to retry.
        logger.warning("MCP request to %s: database unavailable", channel_slug)
        response = _refusal(
            503, INTERNAL_ERROR, DATABASE_UNAVAILABLE, Retry_After=RETRY_SECONDS
        )
        outcome = "database unavailable"
    except Exception:
        logger.exception("MCP request to %s failed", channel_slug)
        response = _refusal(500, INTERNAL_ERROR, "Internal error")
        outcome = "crash"
    if outcome:  # streamed answers log when their stream ends
        log.write(response.status_code, outcome)
    return response


async def _serve(
    request: HttpRequest, channel_slug: str, log: CallLog
) -> tuple[HttpResponse, str]:
    caller = request.scope.get(ADMISSION_KEY) if hasattr(request, "scope") else None
    if caller is None:
        early = await check_before_body(request, channel_slug)
        if isinstance(early, HttpResponse):
            return early, early.quire_outcome
        caller = early
    log.key = caller.log_label
    log.channel_exists = True

    limit = settings.MCP_MAX_BODY_BYTES

    def too_large() -> tuple[HttpResponse, str]:
        message = f"The body is larger than {limit} bytes."
        return _refusal(413, BODY_TOO_LARGE, message), "too large"

    try:
        if int(request.headers.get("Content-Length") or 0) > limit:
            return too_large()
    except ValueError:
        return _refusal(400, INVALID_REQUEST, "Bad Content-Length"), "bad request"
    accept = request.headers.get("Accept", "*/*")
    if not _accepts(accept, "application/json"):
        return _refusal(
            406, INVALID_REQUEST, "Accept application/json"
        ), "not acceptable"
    content_type = request.headers.get("Content-Type", "").split(";")[0].strip().lower()
    if content_type != "application/json":
        message = "Content-Type must be application/json"
        return _refusal(415, INVALID_REQUEST, message), "bad content type"
    try:
        body = request.body
    except RequestDataTooBig:
        return too_large()
    if len(body) > limit:
        return too_large()

    admission_ns = getattr(request, "scope", {}).get(ADMISSION_TIMES_KEY)
    call = dict(
        raw_headers=_raw_headers(request),
        channel=caller.channel,
        caller=caller,
        base_url=request.build_absolute_uri("/").rstrip("/"),
        started_ns=min(log.started_ns, admission_ns[0])
        if admission_ns
        else log.started_ns,
        admission_ns=admission_ns,
    )
    if "text/event-stream" not in accept.lower() or not protocol.may_notify(body):
        reply = await protocol.handle_post(body, **call)
        log.took(reply)
        return _json(reply), reply.outcome
    return await _stream(body, call, log)


def _json(reply: protocol.Reply) -> HttpResponse:
    if reply.body is None:
        return HttpResponse(status=202)
    if reply.encoded is not None:
        return HttpResponse(
            reply.encoded, status=reply.status, content_type="application/json"
        )
    return JsonResponse(reply.body, status=reply.status)


async def _stream(body: bytes, call: dict, log: CallLog) -> tuple[HttpResponse, str]:
    """Answer in JSON unless the handler emits a notification before it finishes;
    then switch to SSE: notifications as they come, the response last."""
    queue: asyncio.Queue = asyncio.Queue()
    task = asyncio.ensure_future(protocol.handle_post(body, emit=queue.put, **call))
    waiter = asyncio.ensure_future(queue.get())
    await asyncio.wait([task, waiter], return_when=asyncio.FIRST_COMPLETED)
    if not waiter.done():
        waiter.cancel()
        reply = task.result()
        log.took(reply)
        return _json(reply), reply.outcome
    first = waiter.result()

    async def events() -> AsyncIterator[bytes]:
        status, outcome = 200, "cancelled"
        getter: asyncio.Future | None = None
        try:
            yield _sse_frame(first)
            while True:
                getter = getter or asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait(
                    [task, getter],
                    timeout=SSE_PING_SECONDS,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if not done:  # keeps proxies and idle timeouts from closing us
                    yield b": ping\n\n"
                elif getter.done():
                    yield _sse_frame(getter.result())
                    getter = None
                else:
                    while not queue.empty():
                        yield _sse_frame(queue.get_nowait())
                    reply = task.result()
                    log.took(reply)
                    status, outcome = reply.status, reply.outcome
                    if reply.body is not None:
                        yield _sse_frame(reply.body)
                    return
        finally:
            # A closed connection cancels the request (2026-07-28 transport rule).
            task.cancel()
            if getter is not None:
                getter.cancel()
            log.write(status, outcome)

    response = StreamingHttpResponse(events(), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response, ""
