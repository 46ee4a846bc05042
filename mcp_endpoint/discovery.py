"""Being found: server cards, the AI catalog, and the registry's server.json.

- A server card per listed channel at `GET /mcp/<slug>/server-card` (the
  location the server-card draft reserves: the streamable-HTTP URL plus
  `/server-card`), media type application/mcp-server-card+json.
- `/.well-known/mcp/catalog.json`: the site's MCP catalog of those cards (the
  location SEP-2127 reserves for a domain's catalog), and
  `/.well-known/ai-catalog.json`, the AI-card catalog clients looked at before.
- `registry_server_json()`: the MCP Registry's server.json (2025-12-11 schema),
  with the channel as a URL template, for `manage.py server_json` to print and
  an operator to publish.

Only channels marked `listed` appear: the others stay unnamed, as everywhere
else (a key or a sign-in is needed to learn that a channel exists).
"""

from urllib.parse import urlsplit

from django.http import Http404, HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from documents.models import MCP_PATH_PREFIX, Channel
from mcp_endpoint.protocol.eras import LEGACY_VERSIONS, MODERN_VERSIONS
from mcp_endpoint.protocol.methods import SERVER_VERSION, capabilities

SERVER_CARD_SCHEMA = (
    "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"
)
SERVER_JSON_SCHEMA = (
    "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
)
SERVER_CARD_TYPE = "application/mcp-server-card+json"
PROTOCOL_VERSIONS = [*LEGACY_VERSIONS, *MODERN_VERSIONS]


def reverse_dns(base_url: str) -> str:
    """quire.example.org -> org.example.quire (ports and brackets dropped)."""
    host = (urlsplit(base_url).hostname or "localhost").strip("[]")
    return ".".join(reversed(host.replace(":", "-").split(".")))


def _short(text: str, limit: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _authorization_header() -> dict:
    return {
        "name": "Authorization",
        "description": "An API key (Bearer qk_…), or leave it out and sign in "
        "(OAuth) when the client offers to.",
        "isRequired": False,
        "isSecret": True,
        "value": "Bearer {api_key}",
        "variables": {
            "api_key": {
                "description": "A Quire API key for this channel.",
                "isSecret": True,
            }
        },
    }


def server_card_name(base_url: str, channel: Channel) -> str:
    """The card's reverse-DNS name, which the MCP catalog lists it under."""
    return f"{reverse_dns(base_url)}/{channel.slug}"


def server_card(base_url: str, channel: Channel) -> dict:
    """The channel's server card: what `server/discover` answers (versions and
    capabilities, from the same functions), without tool lists, which depend
    on the caller's key and the corpus."""
    about = channel.description or f"The document collection {channel.name}."
    return {
        "$schema": SERVER_CARD_SCHEMA,
        "name": server_card_name(base_url, channel),
        "version": SERVER_VERSION,
        "title": _short(channel.name),
        "description": _short(about),
        "websiteUrl": base_url,
        "remotes": [
            {
                "type": "streamable-http",
                "url": base_url + channel.mcp_path,
                "headers": [_authorization_header()],
                "supportedProtocolVersions": PROTOCOL_VERSIONS,
            }
        ],
        "capabilities": capabilities("modern"),
    }


def registry_server_json(base_url: str, *, name: str = "") -> dict:
    """server.json for the MCP Registry: one remote whose URL names the channel
    as a template variable (the listed channels offered as choices)."""
    listed = list(Channel.objects.filter(listed=True).values_list("slug", flat=True))
    channel = {
        "description": "The slug of a Quire channel (each channel is its own "
        "MCP server).",
        "isRequired": True,
    }
    if listed:
        channel["choices"] = listed
        channel["default"] = listed[0]
    return {
        "$schema": SERVER_JSON_SCHEMA,
        "name": name or f"{reverse_dns(base_url)}/quire",
        "title": "Quire",
        "description": "Document collections with search, pages and cited answers.",
        "version": SERVER_VERSION,
        "websiteUrl": base_url,
        "remotes": [
            {
                "type": "streamable-http",
                "url": base_url + MCP_PATH_PREFIX + "{channel}",
                "variables": {"channel": channel},
                "headers": [_authorization_header()],
            }
        ],
    }


def _public(response: JsonResponse) -> JsonResponse:
    response["Access-Control-Allow-Origin"] = "*"
    response["Access-Control-Allow-Methods"] = "GET"
    response["Access-Control-Allow-Headers"] = "Content-Type, If-None-Match"
    response["Cache-Control"] = "public, max-age=3600"
    return response


def _base_url(request: HttpRequest) -> str:
    return request.build_absolute_uri("/").rstrip("/")


@require_GET
def server_card_view(request: HttpRequest, channel_slug: str) -> JsonResponse:
    channel = Channel.objects.filter(slug=channel_slug, listed=True).first()
    if channel is None:
        raise Http404("No listed channel here.")
    card = server_card(_base_url(request), channel)
    return _public(JsonResponse(card, content_type=SERVER_CARD_TYPE))


def _listed_channels():
    return Channel.objects.filter(listed=True).order_by("slug")


def _card_url(base_url: str, channel: Channel) -> str:
    return f"{base_url}{channel.mcp_path}/server-card"


@require_GET
def ai_catalog(request: HttpRequest) -> JsonResponse:
    """The site's AI catalog: one server-card entry per listed channel."""
    base_url = _base_url(request)
    publisher = urlsplit(base_url).hostname or "localhost"
    entries = [
        {
            "identifier": f"urn:air:{publisher}:mcp:{channel.slug}",
            "type": SERVER_CARD_TYPE,
            "url": _card_url(base_url, channel),
        }
        for channel in _listed_channels()
    ]
    response = JsonResponse({"specVersion": "1.0", "entries": entries})
    response["Content-Type"] = "application/ai-catalog+json"
    return _public(response)


@require_GET
def mcp_catalog(request: HttpRequest) -> JsonResponse:
    """The site's MCP catalog (SEP-2127 draft): an entry per listed channel,
    each pointing at its server card."""
    base_url = _base_url(request)
    entries = [
        {
            "identifier": server_card_name(base_url, channel),
            "displayName": _short(channel.name),
            "mediaType": SERVER_CARD_TYPE,
            "url": _card_url(base_url, channel),
        }
        for channel in _listed_channels()
    ]
    return _public(JsonResponse({"specVersion": "draft", "entries": entries}))
