"""JSON-RPC for MCP: era selection, the 2026-07-28 validation ladder, dispatch, errors.

One stateless endpoint speaks both eras (docs/mcp-clients.md, "What the endpoint
speaks"; the versions are listed in eras.py): the handshake era (2024-11-05 …
2025-11-25) and 2026-07-28, chosen per request from the `MCP-Protocol-Version`
header and the body's `_meta`.
"""

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import InterfaceError, OperationalError

from documents.access import Caller
from documents.limits import TooComplex, parse_json
from documents.models import Channel
from documents.telemetry import tracing
from mcp_endpoint.protocol import answers
from mcp_endpoint.protocol.eras import (
    LATEST_LEGACY_VERSION,
    META_LOG_LEVEL,
    META_SERVER_INFO,
    MODERN_VERSIONS,
    run_modern_ladder,
    select_era,
    unsupported_version,
)
from mcp_endpoint.protocol.errors import (
    DATABASE_UNAVAILABLE,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MODERN_HTTP_STATUS,
    PARSE_ERROR,
    JsonRpcError,
)
from mcp_endpoint.protocol.extensions import declares_apps
from mcp_endpoint.protocol.methods import BOTH, METHODS, server_info
from mcp_endpoint.registry import CallContext, registry

__all__ = [
    "BOTH",
    "METHODS",
    "JsonRpcError",
    "Reply",
    "handle_post",
    "may_notify",
    "peek_method",
]

logger = logging.getLogger("mcp_endpoint")

CACHE_TTL_MS = {
    "server/discover": 300_000,
    "tools/list": 60_000,
    "prompts/list": 300_000,
    "resources/list": 60_000,
    "resources/templates/list": 300_000,
    "resources/read": 0,
}
# Results depend on the key's channel: never share them across keys.
CACHE_SCOPE = "private"
# The methods whose handler is given `emit`: a tool may send progress and log
# notifications before its result (registry.CallContext.notify); no other
# method can, so its answer never needs a stream.
NOTIFYING_METHODS = frozenset({"tools/call"})
# The transport peeks at the method of a body up to this size before handling
# it (a tools/list is ~60 bytes; a tool call's arguments can be large, and a
# larger body is not parsed twice).
PEEK_BYTES = 4096


@dataclass
class Reply:
    """What the transport sends back: an HTTP status and one JSON-RPC message."""

    status: int
    body: dict | None  # None: an accepted notification (202, empty body)
    method: str = ""
    tool: str = ""
    outcome: str = "ok"
    # The caller's W3C trace context (params._meta), for the call log.
    trace: dict[str, str] = field(default_factory=dict)
    # `body` already encoded, when it came from mcp_endpoint.protocol.answers.
    encoded: bytes | None = None


def error_reply(
    request_id: Any, error: JsonRpcError, *, status: int, method: str = ""
) -> Reply:
    body = {"jsonrpc": "2.0", "id": request_id, "error": error.as_dict()}
    return Reply(status, body, method=method, outcome=f"error {error.code}")


# --- One POST ----------------------------------------------------------------------


def peek_method(body: bytes) -> str | None:
    """The method of `body` when it is one JSON-RPC request of at most
    PEEK_BYTES; None for a larger body, a batch, a body that doesn't parse or a
    method that isn't a string (handle_post answers those)."""
    if len(body) > PEEK_BYTES:
        return None
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return None
    method = message.get("method") if isinstance(message, dict) else None
    return method if isinstance(method, str) else None


def may_notify(body: bytes) -> bool:
    """Whether the answer to `body` may send notifications before its response
    (a request for one of NOTIFYING_METHODS, or a body too large to peek at):
    the transport answers anything else as one JSON response without setting
    up a stream."""
    return len(body) > PEEK_BYTES or peek_method(body) in NOTIFYING_METHODS


def _valid_id(value: Any) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


async def handle_post(
    body: bytes,
    *,
    raw_headers: list[tuple[str, str]],
    channel: Channel,
    caller: Caller,
    base_url: str,
    emit: Callable[[dict], Awaitable[None]] | None = None,
    started_ns: int | None = None,
    admission_ns: tuple[int, int] | None = None,
) -> Reply:
    """Answer one POSTed JSON-RPC message from `caller` (admitted to `channel`
    by the transport, or the playground's signed-in person). Never raises.

    With traces on (documents.telemetry.tracing), a request is one span from
    `started_ns`, its admission (`admission_ns`, start and end) a child."""
    call = {"channel": channel, "caller": caller, "base_url": base_url}
    try:
        message = parse_json(body, what="The message")
    except TooComplex as exc:
        error = JsonRpcError(PARSE_ERROR, f"Parse error: {exc}")
        return error_reply(None, error, status=400)
    except (ValueError, UnicodeDecodeError):
        return error_reply(None, JsonRpcError(PARSE_ERROR, "Parse error"), status=400)
    invalid = JsonRpcError(INVALID_REQUEST, "Invalid Request")
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return error_reply(None, invalid, status=400)
    headers = dict(raw_headers)
    era = select_era(headers, message)
    method = message.get("method")
    if (
        method is None
        and "id" in message
        and ("result" in message or "error" in message)
    ):
        # A client's answer to a server request: nothing to do in the legacy era,
        # and never sent at all in 2026-07-28.
        if era == "legacy":
            return Reply(202, None, outcome="accepted")
        return error_reply(None, invalid, status=400)
    params = message.get("params", {})
    if not isinstance(method, str) or not isinstance(params, (dict, type(None))):
        return error_reply(None, invalid, status=400)
    params = params or {}
    if "id" not in message:
        if (
            era == "modern"
            and headers.get("mcp-protocol-version") not in MODERN_VERSIONS
        ):
            error = unsupported_version(headers.get("mcp-protocol-version"))
            return error_reply(None, error, status=400, method=method)
        return Reply(202, None, method=method, outcome="accepted")
    request_id = message["id"]
    if not _valid_id(request_id):
        return error_reply(None, invalid, status=400, method=method)

    tool_name = params.get("name", "") if method == "tools/call" else ""
    with tracing.mcp_span(
        method=method,
        tool=tool_name if isinstance(tool_name, str) else "",
        meta=params.get("_meta"),
        attributes={"jsonrpc.request.id": str(request_id), "mcp.era": era},
        started_ns=started_ns,
        admission_ns=admission_ns,
    ) as span:
        reply = await _answer(message, era, raw_headers, call, emit)
        reply.trace = tracing.trace_context(params.get("_meta"))
        if reply.outcome != "ok":
            tracing.failed(span, reply.outcome)
        return reply


async def _answer(
    message: dict,
    era: str,
    raw_headers: list[tuple[str, str]],
    call: dict,
    emit: Callable[[dict], Awaitable[None]] | None,
) -> Reply:
    """The reply to one request, whose envelope handle_post has checked."""
    method, request_id = message["method"], message["id"]
    params = message.get("params") or {}
    tool_name = params.get("name", "") if method == "tools/call" else ""
    headers = dict(raw_headers)
    channel = call["channel"]
    try:
        version = headers.get("mcp-protocol-version") or "2025-03-26"
        client_capabilities: dict = {}
        # A tool call's tool and schema, resolved once for the ladder and the call.
        target = (
            await registry.resolve_tool(channel, tool_name)
            if method == "tools/call"
            else None
        )
        if era == "modern":
            version, client_capabilities = await run_modern_ladder(
                message, raw_headers, target
            )
        elif method == "initialize":
            version = params.get("protocolVersion") or LATEST_LEGACY_VERSION
        if method not in NOTIFYING_METHODS:
            emit = None  # may_notify told the transport no stream is needed
        ctx = _context(method, params, era, version, client_capabilities, emit, **call)
        ctx.tool_target = target
        entry = METHODS.get(method)
        if entry is None or era not in entry[1]:
            raise JsonRpcError(METHOD_NOT_FOUND, "Method not found", method)
        key = answers.answer_key(
            method,
            channel=channel,
            caller=call["caller"],
            era=era,
            version=version,
            params=params,
            client_capabilities=client_capabilities,
        )
        kept = answers.cached(key) if key is not None else None
        if kept is not None:
            return _cached_reply(request_id, method, kept)
        result = await entry[0](params, ctx)
    except JsonRpcError as error:
        status = _status(era, error)
        reply = error_reply(request_id, error, status=status, method=method)
        reply.tool = str(tool_name)
        return reply
    except (OperationalError, InterfaceError):
        logger.warning(
            "MCP %s in channel %s: database unavailable", method, channel.slug
        )
        error = JsonRpcError(INTERNAL_ERROR, DATABASE_UNAVAILABLE)
        return error_reply(request_id, error, status=200, method=method)
    except Exception:
        logger.exception("MCP %s failed in channel %s", method, channel.slug)
        error = JsonRpcError(INTERNAL_ERROR, "Internal error")
        return error_reply(request_id, error, status=200, method=method)

    if era == "modern":
        _add_modern_envelope(result, method, channel)
    if key is not None:
        return _cached_reply(request_id, method, answers.keep(key, result))
    outcome = "tool_error" if result.get("isError") else "ok"
    return Reply(
        200,
        {"jsonrpc": "2.0", "id": request_id, "result": result},
        method=method,
        tool=str(tool_name),
        outcome=outcome,
    )


def _cached_reply(request_id: Any, method: str, kept: tuple[dict, bytes]) -> Reply:
    result, encoded = kept
    return Reply(
        200,
        {"jsonrpc": "2.0", "id": request_id, "result": result},
        method=method,
        encoded=answers.message_bytes(request_id, encoded),
    )


def _status(era: str, error: JsonRpcError) -> int:
    """Handshake-era errors travel with HTTP 200; 2026-07-28 maps codes to statuses."""
    return MODERN_HTTP_STATUS.get(error.code, 200) if era == "modern" else 200


def _context(
    method: str,
    params: dict,
    era: str,
    version: str,
    client_capabilities: dict,
    emit: Callable[[dict], Awaitable[None]] | None,
    **call: Any,
) -> CallContext:
    meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
    input_responses = params.get("inputResponses")
    request_state = params.get("requestState")
    if not isinstance(input_responses, (dict, type(None))) or not isinstance(
        request_state, (str, type(None))
    ):
        raise JsonRpcError(
            INVALID_PARAMS, "inputResponses must be an object, requestState a string"
        )
    progress_token = meta.get("progressToken")
    return CallContext(
        era=era,
        protocol_version=version,
        client_capabilities=client_capabilities,
        apps=declares_apps(method, params, client_capabilities),
        progress_token=progress_token if _valid_id(progress_token) else None,
        log_level=meta.get(META_LOG_LEVEL),
        emit=emit,
        input_responses=input_responses,
        request_state=request_state,
        **call,
    )


def _add_modern_envelope(result: dict, method: str, channel: Channel) -> None:
    """resultType, server info, and cache hints on cacheable complete results."""
    result.setdefault("resultType", "complete")
    result["_meta"] = {
        **(result.get("_meta") or {}),
        META_SERVER_INFO: server_info(channel),
    }
    if method in CACHE_TTL_MS and result["resultType"] == "complete":
        result["ttlMs"] = CACHE_TTL_MS[method]
        result["cacheScope"] = CACHE_SCOPE
