"""Era selection and the 2026-07-28 validation ladder (headers against body)."""

import base64
import binascii
import re
from typing import Any

from mcp_endpoint.protocol.errors import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    UNSUPPORTED_PROTOCOL_VERSION,
    JsonRpcError,
)

LEGACY_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_LEGACY_VERSION = "2025-11-25"
MODERN_VERSIONS = ("2026-07-28",)

META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"

ROUTING_HEADERS = ("mcp-protocol-version", "mcp-method", "mcp-name")
NAME_PARAM = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
_BASE64_SENTINEL = re.compile(r"^=\?base64\?(?P<payload>.*)\?=$")


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
    """Raise JsonRpcError(HEADER_MISMATCH) unless every `Mcp-Param-*` header
    matches its argument."""
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
    message: dict, raw_headers: list[tuple[str, str]], tool_target=None
) -> tuple[str, dict]:
    """The 2026-07-28 request checks in order; returns (version, capabilities).
    `tool_target` is a tools/call's resolved tool (its schema says which
    arguments travel in headers too)."""
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
    if method == "tools/call" and tool_target is not None:
        arguments = params.get("arguments")
        if isinstance(arguments, (dict, type(None))):
            check_param_headers(tool_target.input_schema, arguments or {}, raw_headers)
    if not isinstance(version, str):
        raise JsonRpcError(INVALID_PARAMS, "The protocol version must be a string")
    if version not in MODERN_VERSIONS:
        raise unsupported_version(version)
    capabilities = meta[META_CLIENT_CAPABILITIES]
    return version, capabilities if isinstance(capabilities, dict) else {}
