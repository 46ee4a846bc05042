"""The configurations a new key's page offers, key filled in."""

import json
import shlex

from documents.services.connect import client_configurations

URL = "http://127.0.0.1:8000/mcp/handbook"
KEY = "qk_" + "a" * 40


def test_configurations_carry_the_url_and_key():
    """The mcpServers JSON parses to an http entry with the bearer header; the
    Inspector and curl commands split (as a shell does) into the URL and the
    header; curl posts a tools/list."""
    setup = client_configurations(mcp_url=URL, key=KEY, server_name="quire-handbook")
    entry = json.loads(setup.mcp_servers)["mcpServers"]["quire-handbook"]
    assert entry == {
        "type": "http",
        "url": URL,
        "headers": {"Authorization": f"Bearer {KEY}"},
    }
    inspector = shlex.split(setup.inspector)
    assert inspector[:3] == ["npx", "-y", "@modelcontextprotocol/inspector@2.12.0"]
    assert inspector[inspector.index("--cli") + 1] == URL
    assert inspector[inspector.index("--header") + 1] == f"Authorization: Bearer {KEY}"
    curl = shlex.split(setup.curl)
    assert URL in curl and f"Authorization: Bearer {KEY}" in curl
    assert json.loads(curl[curl.index("-d") + 1])["method"] == "tools/list"


def test_a_url_with_shell_characters_stays_one_argument():
    """A channel URL is quoted, so a pasted command can't run anything else."""
    odd = "http://example.org/mcp/a$(touch x)"
    setup = client_configurations(mcp_url=odd, key=KEY, server_name="x")
    assert odd in shlex.split(setup.curl)
