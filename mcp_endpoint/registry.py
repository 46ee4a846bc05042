"""What a channel serves over MCP: tools, resources, resource templates, prompts.

Quire's own tools and resources register here when their modules are imported;
the test suite registers the conformance fixtures through the same calls, scoped
to its own channel slug, so no production channel ever lists them.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from django.core.signals import setting_changed
from pydantic import BaseModel, ValidationError

from documents.models import ApiKey, Channel

LOG_LEVELS = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)


class ToolError(Exception):
    """A tool ran but failed; the message is shown to the model as an isError result."""


class ResourceNotFound(Exception):
    """No resource answers this URI."""


class InvalidResourceUri(Exception):
    """The URI matches a template but its parameters are malformed."""


@dataclass
class CallContext:
    """Everything a tool, resource or prompt needs to know about the current call."""

    channel: Channel
    api_key: ApiKey | None  # None for the playground, which passes its user
    era: str  # "legacy" or "modern"
    protocol_version: str
    base_url: str  # scheme://host of the request, for absolute links
    client_capabilities: dict = field(default_factory=dict)
    progress_token: str | int | None = None
    log_level: str | None = None
    emit: Callable[[dict], Awaitable[None]] | None = None
    # Multi round-trip requests (2026-07-28): the client's answers to the input
    # requests of an earlier `input_required` result, and the state it echoes.
    input_responses: dict | None = None
    request_state: str | None = None
    # The person behind the call: the playground's signed-in staff member, or
    # the user of a sign-in token (then `grant` is its SignInGrant).
    user: Any = None
    grant: Any = None

    async def notify(self, method: str, params: dict) -> None:
        if self.emit is not None:
            await self.emit({"jsonrpc": "2.0", "method": method, "params": params})

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Report progress, when the client asked for it with a progress token."""
        if self.progress_token is None:
            return
        params: dict[str, Any] = {
            "progressToken": self.progress_token,
            "progress": progress,
        }
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self.notify("notifications/progress", params)

    async def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send a log message to the client.

        Modern era: only when the request carried a log level, and at or above it.
        Legacy era: a stateless server cannot remember logging/setLevel, so it
        sends everything.
        """
        if self.era == "modern":
            if self.log_level not in LOG_LEVELS:
                return
            if LOG_LEVELS.index(level) < LOG_LEVELS.index(self.log_level):
                return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger:
            params["logger"] = logger
        await self.notify("notifications/message", params)


@dataclass
class ToolResult:
    """The outcome of a tool call: content blocks, optional structured content."""

    content: list[dict]
    structured: Any = None
    is_error: bool = False
    # A complete result to send as is (conformance fixtures for MRTR results).
    raw: dict | None = None

    def as_dict(self) -> dict:
        if self.raw is not None:
            return dict(self.raw)
        result: dict[str, Any] = {"content": self.content}
        if self.structured is not None:
            result["structuredContent"] = self.structured
        if self.is_error:
            result["isError"] = True
        return result


def text_block(text: str) -> dict:
    return {"type": "text", "text": text}


def _strip_titles(schema: Any) -> Any:
    """Pydantic adds a `title` to every property; models read names, not titles."""
    if isinstance(schema, dict):
        cleaned = {}
        for key, value in schema.items():
            if key == "properties" and isinstance(value, dict):
                cleaned[key] = {
                    name: _strip_titles(
                        {k: v for k, v in sub.items() if k != "title"}
                        if isinstance(sub, dict)
                        else sub
                    )
                    for name, sub in value.items()
                }
            else:
                cleaned[key] = _strip_titles(value)
        return cleaned
    if isinstance(schema, list):
        return [_strip_titles(item) for item in schema]
    return schema


def _format_validation_error(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        if error["type"] == "extra_forbidden":
            problems.append(f"unknown argument {where!r}")
        elif error["type"] == "missing":
            problems.append(f"{where} is required")
        else:
            problems.append(f"{where}: {error['msg']}")
    return "Invalid arguments: " + "; ".join(problems) + "."


class Tool:
    """A tool: a docstring written for a model, a pydantic `Args` model, `run()`.

    Subclasses adjust the schema per channel in `input_schema()` and check
    per-channel limits in `run()`; both eras share one definition.
    """

    name: ClassVar[str]
    title: ClassVar[str]
    Args: ClassVar[type[BaseModel]]
    read_only: ClassVar[bool] = True
    destructive: ClassVar[bool] = False
    idempotent: ClassVar[bool] = True
    open_world: ClassVar[bool] = False
    # Client capabilities the tool needs (modern era: -32021 when not declared).
    required_client_capabilities: ClassVar[dict] = {}
    # Exceptions of the services a tool calls whose messages are written for a
    # model: they become isError results like ToolError.
    error_types: ClassVar[tuple[type[Exception], ...]] = ()

    def enabled_for(self, channel: Channel) -> bool:
        return self.name in channel.enabled_tools()

    def description(self, channel: Channel) -> str:
        return inspect.cleandoc(self.__doc__ or self.title)

    def input_schema(self, channel: Channel) -> dict:
        schema = _strip_titles(self.Args.model_json_schema())
        schema.pop("title", None)
        schema.pop("description", None)
        schema["additionalProperties"] = False
        return schema

    def output_schema(self, channel: Channel) -> dict | None:
        return None

    def definition(self, channel: Channel) -> dict:
        definition = {
            "name": self.name,
            "title": self.title,
            "description": self.description(channel),
            "inputSchema": self.input_schema(channel),
            "annotations": {
                "title": self.title,
                "readOnlyHint": self.read_only,
                "destructiveHint": self.destructive,
                "idempotentHint": self.idempotent,
                "openWorldHint": self.open_world,
            },
        }
        output_schema = self.output_schema(channel)
        if output_schema is not None:
            definition["outputSchema"] = output_schema
        return definition

    def parse(self, channel: Channel, arguments: dict) -> BaseModel:
        """Validated arguments, or ToolError naming what is wrong.

        Arguments the channel's schema leaves out (e.g. `newest_first` without a
        newest sort) are unknown here even though `Args` knows them.
        """
        schema = registry.tool_input_schema(channel, self)
        allowed = set(schema.get("properties", {}))
        unknown = sorted(set(arguments) - allowed)
        if unknown:
            shown = ", ".join(name[:60] for name in unknown[:10])
            raise ToolError(
                f"Unknown argument(s): {shown}"
                + (f" and {len(unknown) - 10} more" if len(unknown) > 10 else "")
                + f". Allowed: {', '.join(sorted(allowed)) or 'none'}."
            )
        try:
            return self.Args.model_validate(arguments)
        except ValidationError as exc:
            raise ToolError(_format_validation_error(exc)) from None

    async def run(self, args: BaseModel, ctx: CallContext) -> ToolResult:
        raise NotImplementedError


class Resource:
    """A resource with a fixed URI."""

    uri: ClassVar[str]
    name: ClassVar[str]
    title: ClassVar[str] = ""
    mime_type: ClassVar[str] = "application/json"

    def description(self, channel: Channel) -> str:
        return inspect.cleandoc(self.__doc__ or self.name)

    def definition(self, channel: Channel) -> dict:
        return {"uri": self.uri, **self._about(channel)}

    def _about(self, channel: Channel) -> dict:
        about = {
            "name": self.name,
            "description": self.description(channel),
            "mimeType": self.mime_type,
        }
        if self.title:
            about["title"] = self.title
        return about

    async def read(self, uri: str, ctx: CallContext) -> list[dict]:
        """The `contents` list: dicts with `uri`, `mimeType` and `text` or `blob`."""
        raise NotImplementedError


class ResourceTemplate(Resource):
    """A family of resources named by an RFC 6570 URI template."""

    uri_template: ClassVar[str]

    def definition(self, channel: Channel) -> dict:
        return {"uriTemplate": self.uri_template, **self._about(channel)}

    @property
    def prefix(self) -> str:
        """The fixed start of the family's URIs (before the first variable)."""
        return self.uri_template.split("{", 1)[0]

    def matches(self, uri: str) -> bool:
        return uri.startswith(self.prefix)


class Prompt:
    """A prompt template (Quire has none; the conformance fixtures use these)."""

    name: ClassVar[str]
    title: ClassVar[str] = ""
    arguments: ClassVar[list[dict]] = []

    def description(self, channel: Channel) -> str:
        return inspect.cleandoc(self.__doc__ or self.name)

    def definition(self, channel: Channel) -> dict:
        definition: dict[str, Any] = {
            "name": self.name,
            "description": self.description(channel),
        }
        if self.title:
            definition["title"] = self.title
        if self.arguments:
            definition["arguments"] = self.arguments
        return definition

    async def get(self, arguments: dict, ctx: CallContext) -> list[dict] | dict:
        """The prompt's `messages`, or a whole result (an `input_required` one)."""
        raise NotImplementedError

    async def complete(self, argument: str, value: str, ctx: CallContext) -> list[str]:
        return []


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

    def register(self, item: Any, *, channel_slugs: Iterable[str] | None = None):
        """Serve `item` (an instance) in every channel, or only in `channel_slugs`."""
        name = self._key(item)
        self._entries = [e for e in self._entries if self._key(e.item) != name]
        slugs = frozenset(channel_slugs) if channel_slugs is not None else None
        self._entries.append(_Entry(item, slugs))
        self.clear_definitions()
        return item

    def unregister(self, item: Any) -> None:
        name = self._key(item)
        self._entries = [e for e in self._entries if self._key(e.item) != name]
        self.clear_definitions()

    def clear_definitions(self, **kwargs: Any) -> None:
        self._definitions = {}

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
            definitions = {
                tool.name: tool.definition(channel) for tool in self.tools(channel)
            }
            if len(self._definitions) >= DEFINITIONS_CACHE_SIZE:
                self._definitions = {}
            self._definitions[key] = definitions
        return definitions or {}

    def tool_input_schema(self, channel: Channel, tool: Tool) -> dict:
        """The tool's input schema in this channel, from the cached definitions."""
        definition = self.cached_tool_definitions(channel, build=True).get(tool.name)
        return definition["inputSchema"] if definition else tool.input_schema(channel)

    @staticmethod
    def _key(item: Any) -> tuple[str, str]:
        if isinstance(item, Tool):
            return ("tool", item.name)
        if isinstance(item, ResourceTemplate):
            return ("template", item.uri_template)
        if isinstance(item, Resource):
            return ("resource", item.uri)
        if isinstance(item, Prompt):
            return ("prompt", item.name)
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

    def tool(self, channel: Channel, name: Any) -> Tool | None:
        return next((t for t in self.tools(channel) if t.name == name), None)

    def resources(self, channel: Channel) -> list[Resource]:
        return self._items(Resource, channel)

    def templates(self, channel: Channel) -> list[ResourceTemplate]:
        return self._items(ResourceTemplate, channel)

    def prompts(self, channel: Channel) -> list[Prompt]:
        return self._items(Prompt, channel)

    def prompt(self, channel: Channel, name: Any) -> Prompt | None:
        return next((p for p in self.prompts(channel) if p.name == name), None)


registry = Registry()
# Caps such as MCP_LIST_LIMIT_MAX appear in the schemas (tests change them).
setting_changed.connect(registry.clear_definitions)
