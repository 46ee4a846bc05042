"""Tools: a docstring written for a model, a pydantic `Args` model, `run()`."""

import inspect
from typing import Any, ClassVar

from pydantic import BaseModel, ValidationError

from documents.models import Channel
from documents.tool_switches import ToolSwitch
from mcp_endpoint.registry.context import CallContext, ToolResult


class ToolError(Exception):
    """A tool ran but failed; the message is shown to the model as an isError result."""


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

    # The switch that offers the tool in a channel's admin form: by default its
    # own, named and labelled after it; tools that only make sense together
    # share one (`shared_switch`). Not `switchable`: served wherever it is
    # registered (the test suite's conformance fixtures).
    switchable: ClassVar[bool] = True
    on_by_default: ClassVar[bool] = True
    shared_switch: ClassVar[ToolSwitch | None] = None

    # MCP Apps (SEP-1865): the `ui://` view a host shows the tool's results in,
    # and who may call it (("app",): the view only, never listed to a client
    # that does not render Apps).
    ui_resource: ClassVar[str | None] = None
    ui_visibility: ClassVar[tuple[str, ...]] = ("model", "app")

    @property
    def app_only(self) -> bool:
        return "model" not in self.ui_visibility

    def listed(self, definition: dict, *, apps: bool) -> dict | None:
        """The definition as this request's tools/list shows it, or None.

        A client that does not render Apps gets today's definition untouched
        and no app-only tool; one that does gets `_meta.ui` linking the view."""
        if not apps:
            return None if self.app_only else definition
        if self.ui_resource is None:
            return definition
        ui: dict = {"resourceUri": self.ui_resource}
        if self.app_only:
            ui["visibility"] = list(self.ui_visibility)
        return {**definition, "_meta": {**definition.get("_meta", {}), "ui": ui}}

    def switch(self) -> ToolSwitch | None:
        if not self.switchable:
            return None
        return self.shared_switch or ToolSwitch(
            name=self.name,
            label=f"{self.name} ({self.title})",
            default=self.on_by_default,
        )

    def enabled_for(self, channel: Channel) -> bool:
        switch = self.switch()
        return switch is None or channel.tool_switched_on(switch)

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

    def parse(self, arguments: dict, input_schema: dict) -> BaseModel:
        """Validated arguments, or ToolError naming what is wrong.

        Arguments the channel's schema (`input_schema`, as tools/list gave it)
        leaves out (e.g. `newest_first` without a newest sort) are unknown here
        even though `Args` knows them.
        """
        schema = input_schema
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
