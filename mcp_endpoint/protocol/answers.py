"""Encoded results of the methods whose answer is a pure function of its inputs.

`tools/list` and `server/discover` answer the same bytes to every call with the
same inputs, and encoding the tool definitions (per-channel filter schemas with
enums) was most of what a `tools/list` cost once its caller was admitted. The
result of such a call is kept encoded, keyed by everything it is built from:

- the channel, its `corpus_version` (fields and the values in use) and its
  `updated_at` (name, instructions, tool switches);
- the registry's generation (tools registered or withdrawn, a setting changed);
- the era and protocol version, the method's parameters (the cursor), the
  client capabilities the request declares (2026-07-28) and whether it declares
  MCP Apps (both eras read that from `params._meta`);
- the caller's scopes (the tools a caller may use).

Only the request id differs between two answers; it is spliced in.
"""

import json
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder

from documents.access import Caller
from documents.models import Channel
from mcp_endpoint.protocol.extensions import declares_apps
from mcp_endpoint.registry import registry

CACHED_METHODS = frozenset({"tools/list", "server/discover"})
# Distinct answers kept per process; past this the cache starts again (a client
# varying its capabilities on every call must not grow it without bound).
MAX_ANSWERS = 512

_answers: dict[tuple, tuple[dict, bytes]] = {}


def encode(value: Any) -> bytes:
    """JSON as JsonResponse writes it."""
    return json.dumps(value, cls=DjangoJSONEncoder).encode()


def answer_key(
    method: str,
    *,
    channel: Channel,
    caller: Caller,
    era: str,
    version: str,
    params: dict,
    client_capabilities: dict,
) -> tuple | None:
    """The cache key of a call's result, or None when the call isn't cached
    (another method, or parameters that don't encode)."""
    if method not in CACHED_METHODS:
        return None
    try:
        inputs = json.dumps(
            [
                params.get("cursor"),
                client_capabilities,
                declares_apps(method, params, client_capabilities),
            ],
            sort_keys=True,
        )
    except (TypeError, ValueError):
        return None
    return (
        method,
        channel.pk,
        channel.corpus_version,
        channel.updated_at,
        registry.generation,
        era,
        version,
        inputs,
        frozenset(caller.granted_scopes()),
    )


def cached(key: tuple) -> tuple[dict, bytes] | None:
    """(result, its encoding) kept under `key`; the result is shared: read-only."""
    return _answers.get(key)


def keep(key: tuple, result: dict) -> tuple[dict, bytes]:
    if len(_answers) >= MAX_ANSWERS:
        _answers.clear()
    entry = (result, encode(result))
    _answers[key] = entry
    return entry


def message_bytes(request_id: Any, encoded_result: bytes) -> bytes:
    """The JSON-RPC response carrying an encoded result, as `encode` would write
    {"jsonrpc": "2.0", "id": request_id, "result": result}."""
    return b"".join(
        (
            b'{"jsonrpc": "2.0", "id": ',
            encode(request_id),
            b', "result": ',
            encoded_result,
            b"}",
        )
    )
