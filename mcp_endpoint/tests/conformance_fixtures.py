"""The fixture tools, resources and prompts the MCP conformance suites call.

Registered only by the test suite (`register()`), through Quire's own registry,
and only for the channel `CONFORMANCE_SLUG`; no production channel lists them.
"""

import asyncio
import base64
import inspect
import io
import json
import struct
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from documents.models import Channel
from mcp_endpoint.registry import (
    CallContext,
    Resource,
    ResourceNotFound,
    ResourceTemplate,
    Tool,
    ToolResult,
    registry,
    text_block,
)

CONFORMANCE_SLUG = "conformance"


class RawResult(ToolResult):
    """A complete result sent as is (the MRTR `input_required` results)."""

    def __init__(self, raw: dict):
        super().__init__([])
        self.raw = raw

    def as_dict(self) -> dict:
        return dict(self.raw)


class Prompt:
    """A prompt template. Quire serves none; the registry takes any object of
    this shape, and the conformance fixtures are the ones it gets."""

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


def _png() -> str:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (1, 1), "red").save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def _wav() -> str:
    samples = b"\x00\x00" * 8
    header = b"RIFF" + struct.pack("<I", 36 + len(samples)) + b"WAVE"
    header += b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, 8000, 16000, 2, 16)
    header += b"data" + struct.pack("<I", len(samples))
    return base64.b64encode(header + samples).decode()


class NoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FixtureTool(Tool):
    Args = NoArgs
    open_world = False
    switchable = False


def fixture_tool(name: str, description: str, handler, **attributes) -> FixtureTool:
    async def run(self, args, ctx: CallContext) -> ToolResult:
        return await handler(args, ctx)

    cls = type(
        name,
        (FixtureTool,),
        {"name": name, "title": name, "__doc__": description, "run": run, **attributes},
    )
    return cls()


async def simple_text(args, ctx):
    return ToolResult([text_block("This is a simple text response for testing.")])


async def image_content(args, ctx):
    return ToolResult([{"type": "image", "data": _png(), "mimeType": "image/png"}])


async def audio_content(args, ctx):
    return ToolResult([{"type": "audio", "data": _wav(), "mimeType": "audio/wav"}])


async def embedded_resource(args, ctx):
    resource = {
        "uri": "test://embedded-resource",
        "mimeType": "text/plain",
        "text": "This is an embedded resource content.",
    }
    return ToolResult([{"type": "resource", "resource": resource}])


async def multiple_content_types(args, ctx):
    resource = {
        "uri": "test://mixed-content-resource",
        "mimeType": "application/json",
        "text": json.dumps({"test": "data", "value": 123}),
    }
    return ToolResult(
        [
            text_block("Multiple content types test:"),
            {"type": "image", "data": _png(), "mimeType": "image/png"},
            {"type": "resource", "resource": resource},
        ]
    )


async def with_logging(args, ctx):
    await ctx.log("info", "Tool execution started")
    await asyncio.sleep(0.05)
    await ctx.log("info", "Tool processing data")
    await asyncio.sleep(0.05)
    await ctx.log("info", "Tool execution completed")
    return ToolResult([text_block("Tool with logging executed successfully")])


async def error_handling(args, ctx):
    message = "This tool intentionally returns an error for testing"
    return ToolResult([text_block(message)], is_error=True)


async def with_progress(args, ctx):
    for step in (0, 50, 100):
        await ctx.progress(step, 100, f"Completed step {step} of 100")
        await asyncio.sleep(0.05)
    return ToolResult([text_block(str(ctx.progress_token))])


async def streaming_elicitation(args, ctx):
    # 2026-07-28 forbids server requests on the stream: ask through MRTR instead.
    request = {
        "method": "elicitation/create",
        "params": {
            "message": "Please confirm.",
            "requestedSchema": {
                "type": "object",
                "properties": {"ok": {"type": "boolean"}},
            },
        },
    }
    raw = {"resultType": "input_required", "inputRequests": {"confirm": request}}
    return RawResult(raw)


async def missing_capability(args, ctx):
    return ToolResult([text_block("The client declared sampling.")])


async def echo_arguments(args, ctx):
    return ToolResult([text_block(json.dumps(args.model_dump()))])


class SchemaTool(FixtureTool):
    """Tool with JSON Schema 2020-12 features"""

    name = "json_schema_2020_12_tool"
    title = "JSON Schema 2020-12 tool"

    class Args(BaseModel):
        model_config = ConfigDict(extra="forbid")
        name: str | None = None
        address: dict | None = None
        contactMethod: str | None = None  # noqa: N815 (the fixture's own name)
        phone: str | None = None
        email: str | None = None

    def input_schema(self, channel) -> dict:
        return {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "$anchor": "addressDef",
                    "type": "object",
                    "properties": {
                        "street": {"type": "string"},
                        "city": {"type": "string"},
                    },
                }
            },
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string"},
            },
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {
                "properties": {"contactMethod": {"const": "phone"}},
                "required": ["contactMethod"],
            },
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": False,
        }

    async def run(self, args, ctx):
        return await echo_arguments(args, ctx)


class HeaderArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    region: str = Field(json_schema_extra={"x-mcp-header": "Region"})
    priority: int | None = Field(None, json_schema_extra={"x-mcp-header": "Priority"})
    query: str = ""


class HeaderTool(FixtureTool):
    """A tool whose region and priority are mirrored into Mcp-Param headers."""

    name = "test_custom_headers"
    title = "Custom headers"
    Args = HeaderArgs

    def input_schema(self, channel) -> dict:
        return {
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "priority": {"type": "integer", "x-mcp-header": "Priority"},
                "query": {"type": "string"},
            },
            "required": ["region"],
            "additionalProperties": False,
        }

    async def run(self, args, ctx):
        return await echo_arguments(args, ctx)


class StaticText(Resource):
    """A static text resource for testing."""

    uri = "test://static-text"
    name = "static-text"
    mime_type = "text/plain"

    async def read(self, uri, ctx):
        text = "This is the content of the static text resource."
        return [{"uri": uri, "mimeType": "text/plain", "text": text}]


class StaticBinary(Resource):
    """A static binary (PNG) resource for testing."""

    uri = "test://static-binary"
    name = "static-binary"
    mime_type = "image/png"

    async def read(self, uri, ctx):
        return [{"uri": uri, "mimeType": "image/png", "blob": _png()}]


class WatchedResource(Resource):
    """A resource for subscription tests."""

    uri = "test://watched-resource"
    name = "watched-resource"
    mime_type = "text/plain"

    async def read(self, uri, ctx):
        return [{"uri": uri, "mimeType": "text/plain", "text": "Watched resource."}]


class TemplateData(ResourceTemplate):
    """A resource template with an id parameter."""

    uri_template = "test://template/{id}/data"
    name = "template-data"

    async def read(self, uri, ctx):
        identifier = uri.removeprefix(self.prefix).removesuffix("/data")
        if not uri.endswith("/data") or not identifier or "/" in identifier:
            raise ResourceNotFound(uri)
        data = {
            "id": identifier,
            "templateTest": True,
            "data": f"Data for ID: {identifier}",
        }
        return [{"uri": uri, "mimeType": "application/json", "text": json.dumps(data)}]


def user_text(text: str) -> dict:
    return {"role": "user", "content": {"type": "text", "text": text}}


class SimplePrompt(Prompt):
    """A simple prompt without arguments."""

    name = "test_simple_prompt"

    async def get(self, arguments, ctx):
        return [user_text("This is a simple prompt for testing.")]


class ArgumentsPrompt(Prompt):
    """A prompt with two arguments."""

    name = "test_prompt_with_arguments"
    arguments = [
        {"name": "arg1", "description": "First test argument", "required": True},
        {"name": "arg2", "description": "Second test argument", "required": True},
    ]

    async def get(self, arguments, ctx):
        arg1, arg2 = arguments.get("arg1", ""), arguments.get("arg2", "")
        return [user_text(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")]

    async def complete(self, argument, value, ctx) -> list[str]:
        options = ["paris", "park", "party"] if argument == "arg1" else []
        return [option for option in options if option.startswith(value)]


class EmbeddedResourcePrompt(Prompt):
    """A prompt embedding a resource."""

    name = "test_prompt_with_embedded_resource"
    arguments = [
        {"name": "resourceUri", "description": "URI to embed", "required": True}
    ]

    async def get(self, arguments, ctx):
        resource = {
            "uri": arguments.get("resourceUri", "test://example-resource"),
            "mimeType": "text/plain",
            "text": "Embedded resource content for testing.",
        }
        return [
            {"role": "user", "content": {"type": "resource", "resource": resource}},
            user_text("Please process the embedded resource above."),
        ]


class ImagePrompt(Prompt):
    """A prompt with an image."""

    name = "test_prompt_with_image"

    async def get(self, arguments, ctx):
        image = {"type": "image", "data": _png(), "mimeType": "image/png"}
        return [
            {"role": "user", "content": image},
            user_text("Please analyze the image above."),
        ]


def fixtures() -> list[Any]:
    from mcp_endpoint.tests import conformance_mrtr  # it builds on this module

    return [
        fixture_tool("test_simple_text", "Returns simple text.", simple_text),
        fixture_tool("test_image_content", "Returns an image.", image_content),
        fixture_tool("test_audio_content", "Returns audio.", audio_content),
        fixture_tool(
            "test_embedded_resource", "Returns an embedded resource.", embedded_resource
        ),
        fixture_tool(
            "test_multiple_content_types",
            "Returns text, image and resource.",
            multiple_content_types,
        ),
        fixture_tool("test_tool_with_logging", "Logs three messages.", with_logging),
        fixture_tool("test_logging_tool", "Logs three messages.", with_logging),
        fixture_tool("test_error_handling", "Always fails.", error_handling),
        fixture_tool("test_tool_with_progress", "Reports progress.", with_progress),
        fixture_tool(
            "test_streaming_elicitation",
            "Asks the client for input (MRTR).",
            streaming_elicitation,
        ),
        fixture_tool(
            "test_missing_capability",
            "Needs the sampling capability.",
            missing_capability,
            required_client_capabilities={"sampling": {}},
        ),
        SchemaTool(),
        HeaderTool(),
        StaticText(),
        StaticBinary(),
        WatchedResource(),
        TemplateData(),
        SimplePrompt(),
        ArgumentsPrompt(),
        EmbeddedResourcePrompt(),
        ImagePrompt(),
        *conformance_mrtr.mrtr_fixtures(),
    ]


def register() -> None:
    """Serve the fixtures in the conformance channel (idempotent: a name
    registered twice would be refused)."""
    for item in fixtures():
        registry.unregister(item)
        registry.register(item, channel_slugs=[CONFORMANCE_SLUG])
