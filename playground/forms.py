"""The playground's form: a filter form generated from the channel's filter schema,
and the tool arguments an agent would send for what staff entered.

Values are passed on as entered (a bad number stays a string), so the tool's own
validation answers, and staff see the error an agent would see.
"""

from dataclasses import dataclass, field
from typing import Any

from django.http import QueryDict

from documents.filters import filter_fields, filter_schema
from documents.models import Channel, MetadataField

FieldType = MetadataField.FieldType
PLAYGROUND_TOOLS = ("list_documents", "retrieve_text_chunks", "rag_search", "get_pages")
PAGE_SIZE = 10


@dataclass
class FilterInput:
    """One filter field as the form shows it, with the values entered."""

    name: str
    type: str
    description: str
    choices: list[str] = field(default_factory=list)
    selected: list[str] = field(default_factory=list)
    start: str = ""
    end: str = ""
    latest: bool = False
    minimum: str = ""
    maximum: str = ""
    boolean: str = ""

    @property
    def param(self) -> str:
        return f"f_{self.name}"


def _enum(property_schema: dict) -> list[str]:
    for option in property_schema.get("anyOf", []):
        if "enum" in option and option.get("type") == "string":
            return list(option["enum"])
    return []


def filter_inputs(channel: Channel, params: QueryDict) -> list[FilterInput]:
    """The fields MCP clients may filter on, with choices from the schema's enums."""
    properties = filter_schema(channel)["anyOf"][0]["properties"]
    inputs = []
    for metadata_field in filter_fields(channel):
        schema = properties.get(metadata_field.name, {})
        item = FilterInput(
            name=metadata_field.name,
            type=metadata_field.type,
            description=schema.get("description", ""),
            choices=_enum(schema),
        )
        prefix = item.param
        item.selected = [value for value in params.getlist(prefix) if value]
        item.start = params.get(f"{prefix}_start", "").strip()
        item.end = params.get(f"{prefix}_end", "").strip()
        item.latest = params.get(f"{prefix}_latest") == "on"
        item.minimum = params.get(f"{prefix}_min", "").strip()
        item.maximum = params.get(f"{prefix}_max", "").strip()
        item.boolean = params.get(prefix, "") if item.type == FieldType.BOOLEAN else ""
        inputs.append(item)
    return inputs


def _number(text: str) -> Any:
    try:
        number = float(text)
    except ValueError:
        return text  # the tool's error message will name it
    return int(number) if number.is_integer() else number


def metadata_filter(inputs: list[FilterInput]) -> dict | None:
    """The `metadata_filter` object for the values entered (None when empty)."""
    result: dict[str, Any] = {}
    for item in inputs:
        if item.type in (FieldType.STRING, FieldType.STRING_LIST):
            if item.selected:
                selected = item.selected
                result[item.name] = selected[0] if len(selected) == 1 else selected
        elif item.type == FieldType.DATE:
            if item.latest:
                result[item.name] = "latest"
            elif item.start or item.end:
                bounds = {"start": item.start, "end": item.end}
                result[item.name] = {k: v for k, v in bounds.items() if v}
        elif item.type == FieldType.NUMBER:
            bounds = {"min": item.minimum, "max": item.maximum}
            bounds = {k: _number(v) for k, v in bounds.items() if v}
            if bounds:
                result[item.name] = bounds
        elif item.boolean in ("true", "false"):
            result[item.name] = item.boolean == "true"
    return result or None


def _int(text: str | None, default: int | None = None) -> Any:
    if text is None or not text.strip():
        return default
    try:
        return int(text)
    except ValueError:
        return text.strip()


def _ids(text: str) -> list | None:
    parts = [part.strip() for part in text.replace(" ", ",").split(",")]
    ids = [_int(part) for part in parts if part]
    return ids or None


@dataclass
class PlaygroundRequest:
    """What staff asked for: the tool and the arguments an agent would send."""

    tool: str
    arguments: dict
    query: str
    filters: list[FilterInput]
    document_ids: str
    page: int
    values: dict


def read_request(
    channel: Channel, params: QueryDict, tools: list[str]
) -> PlaygroundRequest:
    """Parse the form; `arguments` only holds what the chosen tool takes."""
    tool = params.get("tool") or ""
    if tool not in tools:
        tool = tools[0] if tools else ""
    inputs = filter_inputs(channel, params)
    query = params.get("query", "").strip()
    document_ids = params.get("document_ids", "").strip()
    page_text = params.get("page", "")
    page = max(1, int(page_text)) if page_text.isdigit() else 1
    values = {
        "document_id": params.get("document_id", "").strip(),
        "page_start": params.get("page_start", "").strip() or "1",
        "page_end": params.get("page_end", "").strip() or "1",
        "type": params.get("type") or "both",
        "limit": params.get("limit", "").strip(),
        "newest_first": params.get("newest_first", "true"),
    }
    arguments: dict[str, Any] = {}
    filter_value = metadata_filter(inputs)
    if tool == "list_documents":
        if filter_value is not None:
            arguments["metadata_filter"] = filter_value
        arguments["offset"] = (page - 1) * PAGE_SIZE
        arguments["limit"] = PAGE_SIZE
        if channel.newest_sort:
            arguments["newest_first"] = values["newest_first"] != "false"
    elif tool in ("retrieve_text_chunks", "rag_search"):
        arguments["query"] = query
        ids = _ids(document_ids)
        if ids:
            arguments["document_ids"] = ids
        if filter_value is not None:
            arguments["metadata_filter"] = filter_value
        if tool == "retrieve_text_chunks" and values["limit"]:
            arguments["limit"] = _int(values["limit"])
    elif tool == "get_pages":
        arguments = {
            "document_id": _int(values["document_id"]),
            "page_start": _int(values["page_start"]),
            "page_end": _int(values["page_end"]),
            "type": values["type"],
        }
    return PlaygroundRequest(
        tool=tool,
        arguments=arguments,
        query=query,
        filters=inputs,
        document_ids=document_ids,
        page=page,
        values=values,
    )
