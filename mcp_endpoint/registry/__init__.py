"""What a channel serves over MCP: tools, resources, resource templates, prompts.

Quire's own tools and resources register here when their modules are imported;
the test suite registers the conformance fixtures through the same calls, scoped
to its own channel slug, so no production channel ever lists them.

- context: the call's context (CallContext) and a tool's result (ToolResult);
- tools: Tool and ToolError;
- resources: Resource, ResourceTemplate and their errors;
- this module: the registry, and resolving a tool call in one step.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.core.signals import setting_changed

from documents.models import Channel
from documents.replicas import replica_read_current
from documents.tool_switches import switch_catalogue
from mcp_endpoint.registry.context import (
    LOG_LEVELS,
    CallContext,
    ToolResult,
    text_block,
)
from mcp_endpoint.registry.resources import (
    InvalidResourceUri,
    Resource,
    ResourceNotFound,
    ResourceTemplate,
)
from mcp_endpoint.registry.tools import Tool, ToolError

__all__ = [
    "LOG_LEVELS",
    "CallContext",
    "InvalidResourceUri",
    "Registry",
    "Resource",
    "ResourceNotFound",
    "ResourceTemplate",
    "Tool",
    "ToolError",
    "ToolResult",
    "ToolTarget",
    "registry",
    "text_block",
]


@dataclass(frozen=True)
class ToolTarget:
    """A tool call's tool and the input schema its arguments are checked against."""

    tool: Tool
    input_schema: dict


@dataclass
class _Entry:
    item: Any
    channel_slugs: frozenset[str] | None

    def serves(self, channel: Channel) -> bool:
        return self.channel_slugs is None or channel.slug in self.channel_slugs


# Tool definitions of this many channel versions stay in memory per process.
DEFINITIONS_CACHE_SIZE = 256


class Registry:
    """Tools, resources, templates and prompts, in registration order."""

    def __init__(self) -> None:
        self._entries: list[_Entry] = []
        self._definitions: dict[tuple, dict[str, dict]] = {}
        self._tool_names: frozenset[str] = frozenset()
        # Bumped whenever what a channel serves may have changed (an item
        # registered or withdrawn, a setting changed): caches of answers built
        # from the registry (mcp_endpoint.protocol.answers) key on it.
        self.generation = 0

    def register(self, item: Any, *, channel_slugs: Iterable[str] | None = None):
        """Serve `item` (an instance) in every channel, or only in `channel_slugs`.

        A tool's switch joins the channel form with it. A second item under a
        name already registered is refused: replacing it silently would let
        two modules fight over one tool name unnoticed.
        """
        key = self._key(item)
        if any(self._key(e.item) == key for e in self._entries):
            raise ValueError(f"A {key[0]} named {key[1]!r} is already registered.")
        switch = item.switch() if isinstance(item, Tool) else None
        if switch is not None:
            switch_catalogue.offer(switch, tool=item.name)
        slugs = frozenset(channel_slugs) if channel_slugs is not None else None
        self._entries.append(_Entry(item, slugs))
        self._named_tools()
        self.clear_definitions()
        return item

    def unregister(self, item: Any) -> None:
        key = self._key(item)
        self._entries = [e for e in self._entries if self._key(e.item) != key]
        self._named_tools()
        if isinstance(item, Tool):
            switch_catalogue.withdraw(tool=item.name)
        self.clear_definitions()

    def clear_definitions(self, **kwargs: Any) -> None:
        self._definitions = {}
        self.generation += 1

    def cached_tool_definitions(
        self, channel: Channel, *, build: bool = False
    ) -> dict[str, dict]:
        """{name: definition} of the channel's tools, read-only, built once per
        channel version.

        Filter schemas (fields, enums of values in use) change only with the
        corpus, and every corpus or field change bumps `corpus_version`; channel
        settings change `updated_at`. Without `build`, a miss returns {} so async
        callers can skip a thread hop when the definitions are cached.
        """
        key = (channel.pk, channel.corpus_version, channel.updated_at)
        definitions = self._definitions.get(key)
        if definitions is None and build:
            definitions = _build_definitions(channel, self.tools(channel))
            if len(self._definitions) >= DEFINITIONS_CACHE_SIZE:
                self._definitions = {}
            self._definitions[key] = definitions
        return definitions or {}

    async def resolve_tool(self, channel: Channel, name: Any) -> ToolTarget | None:
        """The channel's tool called `name` with its input schema, in one step
        (from the cached definitions; built in a thread when the channel's
        version isn't cached yet). None when the channel has no such tool."""
        definitions = self.cached_tool_definitions(channel)
        if not definitions:
            definitions = await sync_to_async(self.cached_tool_definitions)(
                channel, build=True
            )
        definition = definitions.get(name) if isinstance(name, str) else None
        tool = self.tool(channel, name) if definition is not None else None
        if tool is None:
            return None
        return ToolTarget(tool, definition["inputSchema"])

    @staticmethod
    def _key(item: Any) -> tuple[str, str]:
        if isinstance(item, Tool):
            return ("tool", item.name)
        if isinstance(item, ResourceTemplate):
            return ("template", item.uri_template)
        if isinstance(item, Resource):
            return ("resource", item.uri)
        if callable(getattr(item, "get", None)) and isinstance(
            getattr(item, "name", None), str
        ):
            return ("prompt", item.name)  # Quire has none; test fixtures do
        raise TypeError(f"Cannot register {item!r}")

    def _items(self, kind: type, channel: Channel) -> list:
        return [
            e.item
            for e in self._entries
            if isinstance(e.item, kind)
            and not (kind is Resource and isinstance(e.item, ResourceTemplate))
            and e.serves(channel)
        ]

    def tools(self, channel: Channel) -> list[Tool]:
        return [
            tool for tool in self._items(Tool, channel) if tool.enabled_for(channel)
        ]

    def tool_names(self) -> frozenset[str]:
        """Every tool registered, for any channel (bounding metric labels)."""
        return self._tool_names

    def _named_tools(self) -> None:
        self._tool_names = frozenset(
            e.item.name for e in self._entries if isinstance(e.item, Tool)
        )

    def tool(self, channel: Channel, name: Any) -> Tool | None:
        return next((t for t in self.tools(channel) if t.name == name), None)

    def resources(self, channel: Channel) -> list[Resource]:
        return self._items(Resource, channel)

    def templates(self, channel: Channel) -> list[ResourceTemplate]:
        return self._items(ResourceTemplate, channel)

    def prompts(self, channel: Channel) -> list:
        """Prompts: objects with a `name`, `definition(channel)`, `get()` and
        `complete()` (see mcp_endpoint.tests.conformance_fixtures)."""
        return [
            e.item
            for e in self._entries
            if self._key(e.item)[0] == "prompt" and e.serves(channel)
        ]

    def prompt(self, channel: Channel, name: Any):
        return next((p for p in self.prompts(channel) if p.name == name), None)


registry = Registry()
# Caps such as MCP_LIST_LIMIT_MAX appear in the schemas (tests change them).
setting_changed.connect(registry.clear_definitions)


@replica_read_current
def _build_definitions(channel: Channel, tools: Iterable[Tool]) -> dict[str, dict]:
    """The tools' definitions; their schemas read the channel's fields and values
    in use, on a replica that has replayed the channel as the caller read it."""
    return {tool.name: tool.definition(channel) for tool in tools}
