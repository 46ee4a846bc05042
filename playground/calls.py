"""What the playground shows: the MCP reply to a tool call, made in-process
through the endpoint's own dispatch, and that reply turned into readable HTML.

Text from documents is always escaped before anything is marked up in it.
"""

import copy
import json
import re
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import async_to_sync
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from documents.access import Caller
from documents.models import Channel, Document
from documents.results import CITATION as CITATION_LABEL
from mcp_endpoint import protocol
from mcp_endpoint.citations import citation_page_url
from mcp_endpoint.protocol.eras import LATEST_LEGACY_VERSION
from mcp_endpoint.registry import registry

LONG_DATA_CHARS = 200
WORD = re.compile(r"\w+", re.UNICODE)


@dataclass
class ToolCall:
    """One tools/call as an agent sends it and the JSON-RPC reply it receives."""

    request: dict
    reply: dict
    status: int

    @property
    def result(self) -> dict:
        return self.reply.get("result") or {}

    @property
    def protocol_error(self) -> str | None:
        error = self.reply.get("error")
        return error.get("message") if isinstance(error, dict) else None

    @property
    def tool_error(self) -> str | None:
        if not self.result.get("isError"):
            return None
        return "\n".join(
            block.get("text", "")
            for block in self.result.get("content", [])
            if block.get("type") == "text"
        )

    @property
    def structured(self) -> Any:
        return self.result.get("structuredContent")


def call_tool(
    channel: Channel, name: str, arguments: dict, *, base_url: str, caller: Caller
) -> ToolCall:
    """Call the tool through the MCP endpoint's dispatch, as a handshake-era
    client of the latest version would (the reply is byte for byte the same
    JSON; no key is involved: `caller` is the signed-in person, who may read
    the channel)."""
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    reply = async_to_sync(protocol.handle_post)(
        json.dumps(message).encode(),
        raw_headers=[
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("mcp-protocol-version", LATEST_LEGACY_VERSION),
        ],
        channel=channel,
        caller=caller,
        base_url=base_url,
    )
    return ToolCall(request=message, reply=reply.body or {}, status=reply.status)


def tool_definition(channel: Channel, name: str) -> dict | None:
    """The tool as tools/list describes it for this channel."""
    tool = registry.tool(channel, name)
    return tool.definition(channel) if tool is not None else None


def shortened(data: Any) -> tuple[Any, int]:
    """A copy with long base64 image data cut short for display, and how many
    strings were cut."""
    data = copy.deepcopy(data)
    cut = 0

    def walk(value: Any) -> None:
        nonlocal cut
        if isinstance(value, dict):
            if value.get("type") == "image" and isinstance(value.get("data"), str):
                text = value["data"]
                if len(text) > LONG_DATA_CHARS:
                    value["data"] = (
                        f"{text[:60]}… ({len(text):,} base64 characters in all)"
                    )
                    cut += 1
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(data)
    return data, cut


def pretty(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False)


def query_terms(query: str) -> list[str]:
    """Words of the query worth marking in results (longest first)."""
    words = {word.lower() for word in WORD.findall(query) if len(word) > 2}
    return sorted(words, key=len, reverse=True)


def highlight(text: str, terms: list[str]) -> SafeString:
    """`text` escaped, with words starting with a query term wrapped in <mark>."""
    if not terms:
        return escape(text)
    pattern = re.compile(
        r"\b(?:" + "|".join(re.escape(term) for term in terms) + r")\w*",
        re.IGNORECASE,
    )
    pieces: list[str] = []
    position = 0
    for match in pattern.finditer(text):
        pieces.append(escape(text[position : match.start()]))
        pieces.append(format_html("<mark>{}</mark>", match.group(0)))
        position = match.end()
    pieces.append(escape(text[position:]))
    return mark_safe("".join(pieces))


@dataclass(frozen=True)
class PageLinks:
    """Links to pages, signed for the playground's caller: the page links an
    MCP client gets, re-admitted by the same rule, so they open for every
    reader of the channel (the admin's page preview is for curators only)."""

    channel: Channel
    caller: Caller
    base_url: str

    def url(self, document_id: int | str, page_number: int | str) -> str:
        return citation_page_url(
            Document(pk=int(document_id), channel_id=self.channel.pk),
            base_url=self.base_url,
            page=int(page_number),
            caller=self.caller,
        )


def document_titles(channel: Channel, ids: list[int]) -> dict[int, str]:
    """The titles of the channel's documents among `ids`, for citations (which
    carry ids only: an agent calls list_documents for titles)."""
    return dict(
        Document.objects.for_channel(channel)
        .filter(pk__in=ids)
        .values_list("pk", "title")
    )


def link_citations(
    text: str, pages: PageLinks, links: dict[tuple[int, int], str] | None = None
) -> SafeString:
    """The answer escaped, its [Document <id>, Page <n>] labels made links: to
    `links[(document id, page)]` when given, else to the page's link."""
    links = links or {}

    def link(match: re.Match) -> str:
        key = (int(match.group(1)), int(match.group(2)))
        return format_html(
            '<a class="citation" href="{}">{}</a>',
            links.get(key) or pages.url(*key),
            match.group(0),
        )

    return mark_safe(CITATION_LABEL.sub(link, str(escape(text))))


@dataclass
class PageView:
    """One page of a get_pages reply: its label, text and image data."""

    label: str
    document_id: int | None = None
    number: int | None = None
    texts: list[str] = field(default_factory=list)
    image: str | None = None


def pages_from(result: dict) -> list[PageView]:
    """Group get_pages content blocks by their [Document <id>, Page <n>] label."""
    pages: list[PageView] = []
    for block in result.get("content", []):
        if block.get("type") == "text":
            match = CITATION_LABEL.fullmatch(block.get("text", "").strip())
            if match:
                pages.append(
                    PageView(
                        label=match.group(0),
                        document_id=int(match.group(1)),
                        number=int(match.group(2)),
                    )
                )
            elif pages:
                pages[-1].texts.append(block["text"])
        elif block.get("type") == "image" and pages:
            pages[-1].image = f"data:{block.get('mimeType')};base64,{block['data']}"
    return pages
