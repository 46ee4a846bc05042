"""JSON-RPC for MCP: era selection, the 2026-07-28 validation ladder, dispatch, errors.

One stateless endpoint speaks both eras (see ../shared/MCP_PROTOCOL.md): the
handshake era (2024-11-05 … 2025-11-25) and 2026-07-28, chosen per request from
the `MCP-Protocol-Version` header and the body's `_meta`.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings

from documents.models import ApiKey, Channel
from mcp_endpoint.registry import (
    LOG_LEVELS,
    CallContext,
    InvalidResourceUri,
    ResourceNotFound,
    ToolError,
    ToolResult,
    registry,
    text_block,
)

logger = logging.getLogger("mcp_endpoint")

SERVER_NAME = "quire"
SERVER_VERSION = "1.0.0"
LEGACY_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_LEGACY_VERSION = "2025-11-25"
MODERN_VERSIONS = ("2026-07-28",)

META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002
HEADER_MISMATCH = -32020
MISSING_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022

MODERN_HTTP_STATUS = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    MISSING_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    METHOD_NOT_FOUND: 404,
}

# Freshness hints of the cacheable 2026-07-28 results. Lists carry per-channel
# schemas (filter enums follow the corpus), so they stay short-lived.
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

ROUTING_HEADERS = ("mcp-protocol-version", "mcp-method", "mcp-name")
NAME_PARAM = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
_BASE64_SENTINEL = re.compile(r"^=\?base64\?(?P<payload>.*)\?=$")


class JsonRpcError(Exception):
    """A protocol failure, answered as a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def as_dict(self) -> dict:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


@dataclass
class Reply:
    """What the transport sends back: an HTTP status and one JSON-RPC message."""

    status: int
    body: dict | None  # None: an accepted notification (202, empty body)
    method: str = ""
    tool: str = ""
    outcome: str = "ok"


def error_reply(
    request_id: Any, error: JsonRpcError, *, status: int, method: str = ""
) -> Reply:
    body = {"jsonrpc": "2.0", "id": request_id, "error": error.as_dict()}
    return Reply(status, body, method=method, outcome=f"error {error.code}")


def server_info(channel: Channel) -> dict:
    return {
        "name": SERVER_NAME,
        "title": f"Quire: {channel.name}",
        "version": SERVER_VERSION,
    }


def server_instructions(channel: Channel) -> str:
    if channel.mcp_instructions.strip():
        return channel.mcp_instructions.strip()
    about = f" {channel.description.strip()}" if channel.description.strip() else ""
    return (
        f"This server is the document collection {channel.name!r}.{about} "
        "Find documents with list_documents, passages with retrieve_text_chunks, "
        "or a cited answer with rag_search; read whole pages with get_pages. "
        "Cite sources as [Document <id>, Page <n>]."
    )


def decode_header_value(value: str | None) -> str | None:
    """An `Mcp-Name`/`Mcp-Param-*` value, with the `=?base64?…?=` form decoded.

    A malformed sentinel gives None, so it never matches a body value.
    """
    if value is None:
        return None
    match = _BASE64_SENTINEL.fullmatch(value)
    if match is None:
        return value
    payload = match.group("payload")
    try:
        decoded = base64.b64decode(payload, validate=True)
        if base64.b64encode(decoded).decode("ascii") != payload:
            return None
        return decoded.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def _header_rendering(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    return None


def _annotated_properties(schema: dict, path: tuple[str, ...] = ()):
    """(path, token, schema) of `x-mcp-header` properties on `properties` chains."""
    for name, sub in (schema.get("properties") or {}).items():
        if not isinstance(sub, dict):
            continue
        if isinstance(sub.get("x-mcp-header"), str):
            yield (*path, name), sub["x-mcp-header"], sub
        yield from _annotated_properties(sub, (*path, name))


def _param_matches(prop_type: Any, value: Any, rendered: str, decoded: str) -> bool:
    if prop_type == "integer" and not isinstance(value, bool):
        try:
            return float(decoded) == float(value)
        except ValueError:
            return False
    return decoded == rendered


def check_param_headers(schema: dict, arguments: dict, headers: list[tuple[str, str]]):
    """Raise HeaderMismatch unless every `Mcp-Param-*` header matches its argument."""
    for path, token, prop in _annotated_properties(schema):
        header = f"mcp-param-{token.lower()}"
        values = [v for k, v in headers if k == header]
        if len(values) > 1:
            raise JsonRpcError(
                HEADER_MISMATCH, f"Mcp-Param-{token} appears more than once"
            )
        raw = values[0] if values else None
        value: Any = arguments
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        rendered = _header_rendering(value) if value is not None else None
        if rendered is None:
            if raw is not None:
                raise JsonRpcError(
                    HEADER_MISMATCH,
                    f"Mcp-Param-{token} header is present but the argument "
                    f"{'.'.join(path)!r} is absent",
                )
            continue
        if raw is None:
            raise JsonRpcError(
                HEADER_MISMATCH,
                f"Mcp-Param-{token} header is missing but the argument "
                f"{'.'.join(path)!r} is present",
            )
        decoded = decode_header_value(raw)
        if decoded is None or not _param_matches(
            prop.get("type"), value, rendered, decoded
        ):
            raise JsonRpcError(
                HEADER_MISMATCH,
                f"Mcp-Param-{token} header does not match the argument "
                f"{'.'.join(path)!r}",
            )


def select_era(headers: dict[str, str], message: dict) -> str:
    """'legacy' for handshake-era traffic, else 'modern' (the ladder may reject it)."""
    version = headers.get("mcp-protocol-version")
    if version in LEGACY_VERSIONS:
        return "legacy"
    if version is None:
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        if not (isinstance(meta, dict) and META_PROTOCOL_VERSION in meta):
            return "legacy"
    return "modern"


def unsupported_version(requested: Any) -> JsonRpcError:
    return JsonRpcError(
        UNSUPPORTED_PROTOCOL_VERSION,
        f"Unsupported protocol version {requested!r}; this server speaks "
        f"{', '.join(MODERN_VERSIONS)} (or the handshake era through initialize).",
        {"supported": list(MODERN_VERSIONS), "requested": requested},
    )


async def run_modern_ladder(
    message: dict, raw_headers: list[tuple[str, str]], channel: Channel
) -> tuple[str, dict]:
    """The 2026-07-28 request checks in order; returns (version, capabilities)."""
    for name in ROUTING_HEADERS:
        if sum(1 for k, _ in raw_headers if k == name) > 1:
            raise JsonRpcError(
                HEADER_MISMATCH, f"The {name} header appears more than once"
            )
    headers = dict(raw_headers)
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict):
        raise JsonRpcError(
            INVALID_PARAMS,
            f"params._meta must be an object carrying {META_PROTOCOL_VERSION!r} "
            f"and {META_CLIENT_CAPABILITIES!r}",
        )
    missing = [
        k for k in (META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES) if k not in meta
    ]
    if missing:
        raise JsonRpcError(
            INVALID_PARAMS, f"params._meta is missing {', '.join(missing)}"
        )
    version = meta[META_PROTOCOL_VERSION]
    if headers.get("mcp-protocol-version") != version:
        raise JsonRpcError(
            HEADER_MISMATCH,
            "The MCP-Protocol-Version header does not match "
            f"params._meta[{META_PROTOCOL_VERSION!r}]",
        )
    method = message["method"]
    if headers.get("mcp-method") != method:
        raise JsonRpcError(
            HEADER_MISMATCH, "The Mcp-Method header does not match the body's method"
        )
    name_key = NAME_PARAM.get(method)
    if name_key is not None and params.get(name_key) is not None:
        if decode_header_value(headers.get("mcp-name")) != params[name_key]:
            raise JsonRpcError(
                HEADER_MISMATCH,
                f"The Mcp-Name header does not match the body's {name_key!r}",
            )
    if method == "tools/call":
        tool = registry.tool(channel, params.get("name"))
        arguments = params.get("arguments")
        if tool is not None and isinstance(arguments, (dict, type(None))):
            schema = await sync_to_async(tool.input_schema)(channel)
            check_param_headers(schema, arguments or {}, raw_headers)
    if not isinstance(version, str):
        raise JsonRpcError(INVALID_PARAMS, "The protocol version must be a string")
    if version not in MODERN_VERSIONS:
        raise unsupported_version(version)
    capabilities = meta[META_CLIENT_CAPABILITIES]
    return version, capabilities if isinstance(capabilities, dict) else {}


# --- Method handlers -------------------------------------------------------------

Handler = Callable[[dict, CallContext], Awaitable[dict]]


def _paginate(items: list, params: dict) -> tuple[list, dict]:
    cursor = params.get("cursor")
    offset = 0
    if cursor not in (None, ""):
        try:
            offset = int(
                base64.urlsafe_b64decode(str(cursor).encode())
                .decode()
                .removeprefix("o:")
            )
        except (ValueError, binascii.Error, UnicodeDecodeError):
            raise JsonRpcError(INVALID_PARAMS, f"Invalid cursor: {cursor!r}") from None
        if offset < 0 or offset > len(items):
            raise JsonRpcError(INVALID_PARAMS, f"Invalid cursor: {cursor!r}")
    page_size = getattr(settings, "MCP_PAGE_SIZE", 100)
    page = items[offset : offset + page_size]
    extra = {}
    if offset + page_size < len(items):
        extra["nextCursor"] = base64.urlsafe_b64encode(
            f"o:{offset + page_size}".encode()
        ).decode()
    return page, extra


def capabilities(era: str) -> dict:
    caps: dict[str, dict] = {
        "tools": {},
        "resources": {},
        "prompts": {},
        "completions": {},
    }
    if era == "legacy":
        caps["logging"] = {}
    return caps


async def handle_initialize(params: dict, ctx: CallContext) -> dict:
    requested = params.get("protocolVersion")
    return {
        "protocolVersion": requested
        if requested in LEGACY_VERSIONS
        else LATEST_LEGACY_VERSION,
        "capabilities": capabilities("legacy"),
        "serverInfo": server_info(ctx.channel),
        "instructions": server_instructions(ctx.channel),
    }


async def handle_discover(params: dict, ctx: CallContext) -> dict:
    return {
        "supportedVersions": list(MODERN_VERSIONS),
        "capabilities": capabilities("modern"),
        "instructions": server_instructions(ctx.channel),
    }


async def handle_ping(params: dict, ctx: CallContext) -> dict:
    return {}


async def handle_set_level(params: dict, ctx: CallContext) -> dict:
    if params.get("level") not in LOG_LEVELS:
        raise JsonRpcError(
            INVALID_PARAMS, f"level must be one of: {', '.join(LOG_LEVELS)}"
        )
    return {}


def _tool_definitions(channel: Channel) -> list[dict]:
    return [tool.definition(channel) for tool in registry.tools(channel)]


async def handle_tools_list(params: dict, ctx: CallContext) -> dict:
    tools = await sync_to_async(_tool_definitions)(ctx.channel)
    page, extra = _paginate(tools, params)
    return {"tools": page, **extra}


async def handle_tools_call(params: dict, ctx: CallContext) -> dict:
    name = params.get("name")
    tool = registry.tool(ctx.channel, name)
    if tool is None:
        raise JsonRpcError(INVALID_PARAMS, f"Unknown tool: {name}")
    arguments = params.get("arguments") or {}
    if not isinstance(arguments, dict):
        raise JsonRpcError(INVALID_PARAMS, "arguments must be an object")
    if ctx.era == "modern":
        missing = {
            key: value
            for key, value in tool.required_client_capabilities.items()
            if key not in ctx.client_capabilities
        }
        if missing:
            raise JsonRpcError(
                MISSING_CLIENT_CAPABILITY,
                f"{name} needs the client capabilities: {', '.join(missing)}",
                {"requiredCapabilities": missing},
            )
    try:
        args = await sync_to_async(tool.parse)(ctx.channel, arguments)
        result = await tool.run(args, ctx)
    except ToolError as exc:
        result = ToolResult([text_block(str(exc))], is_error=True)
    except JsonRpcError:
        raise
    except Exception:
        logger.exception("Tool %s failed in channel %s", name, ctx.channel.slug)
        result = ToolResult(
            [text_block(f"{name} failed because of a server error. Try again later.")],
            is_error=True,
        )
    return result.as_dict()


async def handle_resources_list(params: dict, ctx: CallContext) -> dict:
    resources = [r.definition(ctx.channel) for r in registry.resources(ctx.channel)]
    page, extra = _paginate(resources, params)
    return {"resources": page, **extra}


async def handle_templates_list(params: dict, ctx: CallContext) -> dict:
    templates = [t.definition(ctx.channel) for t in registry.templates(ctx.channel)]
    page, extra = _paginate(templates, params)
    return {"resourceTemplates": page, **extra}


async def handle_resources_read(params: dict, ctx: CallContext) -> dict:
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise JsonRpcError(INVALID_PARAMS, "uri must be a string")
    not_found = JsonRpcError(
        RESOURCE_NOT_FOUND if ctx.era == "legacy" else INVALID_PARAMS,
        "Resource not found",
        {"uri": uri},
    )
    resource = next((r for r in registry.resources(ctx.channel) if r.uri == uri), None)
    if resource is None:
        resource = next(
            (t for t in registry.templates(ctx.channel) if t.matches(uri)), None
        )
    if resource is None:
        raise not_found
    try:
        return {"contents": await resource.read(uri, ctx)}
    except ResourceNotFound:
        raise not_found from None
    except InvalidResourceUri as exc:
        raise JsonRpcError(INVALID_PARAMS, str(exc), {"uri": uri}) from None


async def handle_prompts_list(params: dict, ctx: CallContext) -> dict:
    prompts = [p.definition(ctx.channel) for p in registry.prompts(ctx.channel)]
    page, extra = _paginate(prompts, params)
    return {"prompts": page, **extra}


async def handle_prompts_get(params: dict, ctx: CallContext) -> dict:
    prompt = registry.prompt(ctx.channel, params.get("name"))
    if prompt is None:
        raise JsonRpcError(INVALID_PARAMS, f"Unknown prompt: {params.get('name')}")
    arguments = params.get("arguments") or {}
    if not isinstance(arguments, dict):
        raise JsonRpcError(INVALID_PARAMS, "arguments must be an object")
    messages = await prompt.get(arguments, ctx)
    if isinstance(messages, dict):
        return messages
    result: dict[str, Any] = {"messages": messages}
    description = prompt.description(ctx.channel)
    if description:
        result["description"] = description
    return result


async def handle_complete(params: dict, ctx: CallContext) -> dict:
    ref = params.get("ref") or {}
    argument = params.get("argument") or {}
    if not isinstance(ref, dict) or not isinstance(argument, dict):
        raise JsonRpcError(INVALID_PARAMS, "ref and argument must be objects")
    values: list[str] = []
    if ref.get("type") == "ref/prompt":
        prompt = registry.prompt(ctx.channel, ref.get("name"))
        if prompt is None:
            raise JsonRpcError(INVALID_PARAMS, f"Unknown prompt: {ref.get('name')}")
        values = await prompt.complete(
            str(argument.get("name", "")), str(argument.get("value", "")), ctx
        )
    return {
        "completion": {
            "values": values[:100],
            "total": len(values),
            "hasMore": len(values) > 100,
        }
    }


BOTH = ("legacy", "modern")
METHODS: dict[str, tuple[Handler, tuple[str, ...]]] = {
    "initialize": (handle_initialize, ("legacy",)),
    "ping": (handle_ping, ("legacy",)),
    "logging/setLevel": (handle_set_level, ("legacy",)),
    "server/discover": (handle_discover, ("modern",)),
    "tools/list": (handle_tools_list, BOTH),
    "tools/call": (handle_tools_call, BOTH),
    "resources/list": (handle_resources_list, BOTH),
    "resources/templates/list": (handle_templates_list, BOTH),
    "resources/read": (handle_resources_read, BOTH),
    "prompts/list": (handle_prompts_list, BOTH),
    "prompts/get": (handle_prompts_get, BOTH),
    "completion/complete": (handle_complete, BOTH),
}


# --- One POST ----------------------------------------------------------------------


def _valid_id(value: Any) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


async def handle_post(
    body: bytes,
    *,
    raw_headers: list[tuple[str, str]],
    channel: Channel,
    api_key: ApiKey | None,
    base_url: str,
    emit: Callable[[dict], Awaitable[None]] | None = None,
) -> Reply:
    """Answer one POSTed JSON-RPC message. Never raises."""
    try:
        message = json.loads(body)
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

    version = headers.get("mcp-protocol-version") or "2025-03-26"
    client_capabilities: dict = {}
    if era == "modern":
        try:
            version, client_capabilities = await run_modern_ladder(
                message, raw_headers, channel
            )
        except JsonRpcError as error:
            status = MODERN_HTTP_STATUS.get(error.code, 200)
            return error_reply(request_id, error, status=status, method=method)
    elif method == "initialize":
        version = params.get("protocolVersion") or LATEST_LEGACY_VERSION

    meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
    progress_token = meta.get("progressToken")
    input_responses = params.get("inputResponses")
    request_state = params.get("requestState")
    if not isinstance(input_responses, (dict, type(None))) or not isinstance(
        request_state, (str, type(None))
    ):
        error = JsonRpcError(
            INVALID_PARAMS, "inputResponses must be an object, requestState a string"
        )
        status = 400 if era == "modern" else 200
        return error_reply(request_id, error, status=status, method=method)
    ctx = CallContext(
        channel=channel,
        api_key=api_key,
        era=era,
        protocol_version=version,
        base_url=base_url,
        client_capabilities=client_capabilities,
        progress_token=progress_token if _valid_id(progress_token) else None,
        log_level=meta.get(META_LOG_LEVEL),
        emit=emit,
        input_responses=input_responses,
        request_state=request_state,
    )
    tool_name = params.get("name", "") if method == "tools/call" else ""
    entry = METHODS.get(method)
    try:
        if entry is None or era not in entry[1]:
            raise JsonRpcError(METHOD_NOT_FOUND, "Method not found", method)
        result = await entry[0](params, ctx)
    except JsonRpcError as error:
        status = MODERN_HTTP_STATUS.get(error.code, 200) if era == "modern" else 200
        reply = error_reply(request_id, error, status=status, method=method)
        reply.tool = str(tool_name)
        return reply
    except Exception:
        logger.exception("MCP %s failed in channel %s", method, channel.slug)
        error = JsonRpcError(INTERNAL_ERROR, "Internal error")
        return error_reply(request_id, error, status=200, method=method)

    if era == "modern":
        result.setdefault("resultType", "complete")
        result_meta = dict(result.get("_meta") or {})
        result_meta[META_SERVER_INFO] = server_info(channel)
        result["_meta"] = result_meta
        if method in CACHE_TTL_MS and result["resultType"] == "complete":
            result["ttlMs"] = CACHE_TTL_MS[method]
            result["cacheScope"] = CACHE_SCOPE
    outcome = "tool_error" if result.get("isError") else "ok"
    return Reply(
        200,
        {"jsonrpc": "2.0", "id": request_id, "result": result},
        method=method,
        tool=str(tool_name),
        outcome=outcome,
    )
