"""Being found: server cards and the AI catalog for listed channels only, and
the registry's server.json with the channel as a URL template."""

import json
import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from documents.access import COMMAND_LINE
from documents.services.keys import create_api_key
from mcp_endpoint.tests.conftest import McpClient

pytestmark = pytest.mark.django_db
NAME = re.compile(r"^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$")


@pytest.fixture
def channels(make_channel):
    listed = make_channel(
        "handbook", name="Staff handbook", description="Policies.", listed=True
    )
    make_channel("secret", name="Secret")
    return listed


def test_a_listed_channel_has_a_server_card(channels):
    response = Client().get(
        "/mcp/handbook/server-card", HTTP_ACCEPT="application/mcp-server-card+json"
    )
    assert response.status_code == 200
    assert response["Content-Type"] == "application/mcp-server-card+json"
    assert response["Access-Control-Allow-Origin"] == "*"
    card = response.json()
    assert card["$schema"].endswith("/schemas/v1/server-card.schema.json")
    assert NAME.match(card["name"]) and card["name"] == "testserver/handbook"
    assert card["title"] == "Staff handbook" and card["description"] == "Policies."
    remote = card["remotes"][0]
    assert remote == {
        "type": "streamable-http",
        "url": "http://testserver/mcp/handbook",
        "headers": remote["headers"],
        "supportedProtocolVersions": remote["supportedProtocolVersions"],
    }
    assert "2026-07-28" in remote["supportedProtocolVersions"]
    assert remote["headers"][0]["isSecret"] is True


def test_unlisted_channels_stay_unnamed(channels):
    assert Client().get("/mcp/secret/server-card").status_code == 404
    catalog = Client().get("/.well-known/ai-catalog.json").json()
    assert catalog == {
        "specVersion": "1.0",
        "entries": [
            {
                "identifier": "urn:air:testserver:mcp:handbook",
                "type": "application/mcp-server-card+json",
                "url": "http://testserver/mcp/handbook/server-card",
            }
        ],
    }


def test_server_json_names_the_channel_as_a_url_template(channels):
    out = StringIO()
    call_command("server_json", "--base-url", "https://quire.example.org/", stdout=out)
    document = json.loads(out.getvalue())
    assert document["$schema"].endswith("/schemas/2025-12-11/server.schema.json")
    assert document["name"] == "org.example.quire/quire" and NAME.match(
        document["name"]
    )
    remote = document["remotes"][0]
    assert remote["url"] == "https://quire.example.org/mcp/{channel}"
    assert remote["variables"]["channel"]["choices"] == ["handbook"]
    assert len(document["description"]) <= 100


def test_the_server_card_agrees_with_server_discover(channels):
    """The card's capabilities and versions are what server/discover answers
    the same channel, and the card lists no tools, resources or prompts."""
    card = Client().get("/mcp/handbook/server-card").json()
    key = create_api_key(actor=COMMAND_LINE, name="agent", channels=[channels])
    mcp = McpClient("handbook", key.raw_key, "modern")
    discovered = mcp.result("server/discover")
    assert card["capabilities"] == discovered["capabilities"]
    versions = card["remotes"][0]["supportedProtocolVersions"]
    assert set(discovered["supportedVersions"]) <= set(versions)
    assert not {"tools", "resources", "prompts"} & set(card)


def test_the_mcp_catalog_lists_listed_channels_only(channels, make_channel):
    """/.well-known/mcp/catalog.json names each listed channel once, pointing
    at its card, and never an unlisted one; it is public and cacheable."""
    make_channel("archive", name="Archive", listed=True)
    response = Client().get("/.well-known/mcp/catalog.json")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response["Access-Control-Allow-Origin"] == "*"
    assert "max-age" in response["Cache-Control"]
    catalog = response.json()
    assert catalog == {
        "specVersion": "draft",
        "entries": [
            {
                "identifier": "testserver/archive",
                "displayName": "Archive",
                "mediaType": "application/mcp-server-card+json",
                "url": "http://testserver/mcp/archive/server-card",
            },
            {
                "identifier": "testserver/handbook",
                "displayName": "Staff handbook",
                "mediaType": "application/mcp-server-card+json",
                "url": "http://testserver/mcp/handbook/server-card",
            },
        ],
    }
    for entry in catalog["entries"]:
        card = Client().get(entry["url"].removeprefix("http://testserver"))
        assert card.status_code == 200 and card.json()["name"] == entry["identifier"]
    assert "secret" not in response.content.decode()
    assert Client().post("/.well-known/mcp/catalog.json").status_code == 405
