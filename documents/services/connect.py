"""What a person pastes into an MCP client to use a channel: the one place the
ready-made configurations are written (the new key's page, the playground)."""

import json
import shlex
from dataclasses import dataclass

# The Inspector version docs/mcp-clients.md documents and the tests run.
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"


@dataclass(frozen=True)
class ClientConfigurations:
    """A channel's MCP URL and a key, as each kind of client takes them."""

    mcp_url: str
    key: str
    mcp_servers: str  # the `mcpServers` JSON entry (Claude, Cursor, VS Code...)
    inspector: str  # the MCP Inspector command line, listing the tools
    curl: str  # a raw JSON-RPC tools/list over HTTP


def client_configurations(
    *, mcp_url: str, key: str, server_name: str
) -> ClientConfigurations:
    """The configurations for `mcp_url` with `key` filled in (a placeholder
    where the key isn't known), named `server_name` in the client."""
    header = f"Authorization: Bearer {key}"
    entry = {
        "type": "http",
        "url": mcp_url,
        "headers": {"Authorization": f"Bearer {key}"},
    }
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    return ClientConfigurations(
        mcp_url=mcp_url,
        key=key,
        mcp_servers=json.dumps({"mcpServers": {server_name: entry}}, indent=2),
        inspector=(
            f"npx -y {INSPECTOR} --cli {shlex.quote(mcp_url)} --transport http "
            f"--header {shlex.quote(header)} --method tools/list"
        ),
        curl=(
            f"curl -s {shlex.quote(mcp_url)} -H {shlex.quote(header)} "
            "-H 'Content-Type: application/json' "
            "-H 'Accept: application/json, text/event-stream' "
            "-H 'MCP-Protocol-Version: 2025-11-25' "
            f"-d {shlex.quote(body)}"
        ),
    )
