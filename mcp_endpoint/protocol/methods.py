"""The MCP methods: one async handler per method, and which eras serve it."""

import base64
import binascii
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import InterfaceError, OperationalError

from documents.models import Channel
from mcp_endpoint.protocol.eras import (
    LATEST_LEGACY_VERSION,
    LEGACY_VERSIONS,
    MODERN_VERSIONS,
)
from mcp_endpoint.protocol.errors import (
    INVALID_PARAMS,
    MISSING_CLIENT_CAPABILITY,
    RESOURCE_NOT_FOUND,
    JsonRpcError,
)
from mcp_endpoint.protocol.extensions import UI_EXTENSION
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
    page_size = settings.MCP_PAGE_SIZE
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
    server_capabilities = capabilities("legacy")
    if ctx.apps:  # SEP-1724: an extension is negotiated from both sides
        server_capabilities["extensions"] = {UI_EXTENSION: {}}
    return {
        "protocolVersion": requested
        if requested in LEGACY_VERSIONS
        else LATEST_LEGACY_VERSION,
        "capabilities": server_capabilities,
        "serverInfo": server_info(ctx.channel),
        "instructions": server_instructions(ctx.channel),
    }


async def handle_discover(params: dict, ctx: CallContext) -> dict:
    server_capabilities = capabilities("modern")
    if ctx.apps:
        server_capabilities["extensions"] = {UI_EXTENSION: {}}
    return {
        "supportedVersions": list(MODERN_VERSIONS),
        "capabilities": server_capabilities,
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
    return list(registry.cached_tool_definitions(channel, build=True).values())


async def handle_tools_list(params: dict, ctx: CallContext) -> dict:
    cached = registry.cached_tool_definitions(ctx.channel)
    if cached:
        definitions = list(cached.values())
    else:
        definitions = await sync_to_async(_tool_definitions)(ctx.channel)
    by_name = {tool.name: tool for tool in registry.tools(ctx.channel)}
    tools = [
        listed
        for definition in definitions
        if (tool := by_name.get(definition["name"])) is not None
        and (listed := tool.listed(definition, apps=ctx.apps)) is not None
    ]
    page, extra = _paginate(tools, params)
    return {"tools": page, **extra}


async def handle_tools_call(params: dict, ctx: CallContext) -> dict:
    name = params.get("name")
    target = ctx.tool_target
    if target is None:
        raise JsonRpcError(INVALID_PARAMS, f"Unknown tool: {name}")
    tool = target.tool
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
        args = tool.parse(arguments, target.input_schema)
        result = await tool.run(args, ctx)
    except (ToolError, *tool.error_types) as exc:
        result = ToolResult([text_block(str(exc))], is_error=True)
    except (JsonRpcError, OperationalError, InterfaceError):
        raise  # protocol errors, and outages: a server fault, not a tool failure
    except Exception:
        logger.exception("Tool %s failed in channel %s", name, ctx.channel.slug)
        result = ToolResult(
            [text_block(f"{name} failed because of a server error. Try again later.")],
            is_error=True,
        )
    return result.as_dict()


async def handle_resources_list(params: dict, ctx: CallContext) -> dict:
    resources = [
        r.definition(ctx.channel)
        for r in registry.resources(ctx.channel)
        if ctx.apps or not r.for_apps
    ]
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
