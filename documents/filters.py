"""`metadata_filter`: one validated object compiled to conditions over Document.

Fields combine with AND. Per field type:
- string: a string or a list of strings, equal to it / to any of them;
- string_list: a string or a list of strings, the document's list contains any;
- date: `{"start", "end"}` (ISO dates, inclusive) or `"latest"` (the newest value
  among documents matching the other conditions);
- number: `{"min", "max"}` (inclusive) or a number;
- boolean: true or false.

Every mistake is a FilterError whose message is written for a model: it names the
allowed fields, the closest values in use or the expected shape. A filter never
silently widens a search.
"""

import datetime
import difflib
import json
from typing import Any

from django.conf import settings
from django.db.models import F, Func, Max, Q, Subquery, TextField
from django.db.models.fields.json import KT
from django.db.models.lookups import Exact

from documents.models import Channel, Document, MetadataField

FieldType = MetadataField.FieldType
FILTER_TYPES = (
    FieldType.STRING,
    FieldType.STRING_LIST,
    FieldType.DATE,
    FieldType.NUMBER,
    FieldType.BOOLEAN,
)
LATEST = "latest"


MAX_FILTER_VALUES = 100


class FilterError(Exception):
    """A metadata_filter the channel cannot apply; the message says how to fix it."""


def _shown(value: Any) -> str:
    """A value as JSON for an error message, cut short."""
    if isinstance(value, str):
        text = repr(value)
    else:
        try:
            text = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def filter_fields(channel: Channel) -> list[MetadataField]:
    """The fields clients may filter on: filterable ones of a filterable type,
    narrowed by `Channel.filterable_fields` when that list is not empty."""
    fields = [
        field
        for field in channel.metadata_fields.all()
        if field.filterable and field.type in FILTER_TYPES
    ]
    if channel.filterable_fields:
        allowed = set(channel.filterable_fields)
        fields = [field for field in fields if field.name in allowed]
    return fields


def values_in_use(channel: Channel, field: MetadataField) -> list[str]:
    """Distinct values of a string or string_list field among the channel's
    ready documents, sorted."""
    documents = Document.objects.for_channel(channel).ready().order_by()
    if field.type == FieldType.STRING_LIST:
        values = (
            documents.filter(**{f"metadata__{field.name}__isnull": False})
            .annotate(
                value=Func(
                    F(f"metadata__{field.name}"),
                    function="jsonb_array_elements_text",
                    output_field=TextField(),
                )
            )
            .values_list("value", flat=True)
        )
    else:
        values = documents.annotate(value=KT(f"metadata__{field.name}")).values_list(
            "value", flat=True
        )
    return sorted({value for value in values.distinct() if value})


def enum_values(values: list[str]) -> list[str] | None:
    """The values for a schema's enum, or None when they don't fit its caps
    (MCP_ENUM_MAX_VALUES values, each at most MCP_ENUM_VALUE_MAX_CHARS long):
    whatever documents hold goes into every client's tools/list, so it must
    stay small."""
    if not values or len(values) > settings.MCP_ENUM_MAX_VALUES:
        return None
    if any(len(value) > settings.MCP_ENUM_VALUE_MAX_CHARS for value in values):
        return None
    return values


def filter_schema(channel: Channel) -> dict:
    """JSON schema of `metadata_filter` for this channel (nullable)."""
    properties: dict[str, dict] = {}
    for field in filter_fields(channel):
        properties[field.name] = _field_schema(channel, field)
    return {
        "anyOf": [
            {
                "type": "object",
                "properties": properties,
                "additionalProperties": False,
                "description": "Conditions on document metadata, combined with AND.",
            },
            {"type": "null"},
        ]
    }


def _field_schema(channel: Channel, field: MetadataField) -> dict:
    description = field.description.strip()
    if field.type in (FieldType.STRING, FieldType.STRING_LIST):
        item: dict[str, Any] = {"type": "string"}
        values = values_in_use(channel, field)
        meaning = (
            "Documents whose value is any of these."
            if field.type == FieldType.STRING
            else "Documents whose list contains any of these."
        )
        enum = enum_values(values)
        if enum:
            item["enum"] = enum
        elif values:
            meaning += (
                f" {len(values)} values are in use, too many or too long to list: "
                "a value no document has is refused with the closest ones."
            )
        schema = {
            "anyOf": [
                item,
                {
                    "type": "array",
                    "items": item,
                    "minItems": 1,
                    "maxItems": MAX_FILTER_VALUES,
                },
            ],
            "description": _join(description, meaning),
        }
    elif field.type == FieldType.DATE:
        date = {"type": "string", "format": "date"}
        schema = {
            "anyOf": [
                {
                    "type": "object",
                    "properties": {"start": date, "end": date},
                    "additionalProperties": False,
                    "minProperties": 1,
                },
                {"type": "string", "enum": [LATEST]},
            ],
            "description": _join(
                description,
                'An inclusive range {"start": "YYYY-MM-DD", "end": "YYYY-MM-DD"} '
                '(either end optional), or "latest" for the newest date among '
                "documents matching the other conditions.",
            ),
        }
    elif field.type == FieldType.NUMBER:
        schema = {
            "anyOf": [
                {"type": "number"},
                {
                    "type": "object",
                    "properties": {
                        "min": {"type": "number"},
                        "max": {"type": "number"},
                    },
                    "additionalProperties": False,
                    "minProperties": 1,
                },
            ],
            "description": _join(
                description, 'A number, or an inclusive range {"min": .., "max": ..}.'
            ),
        }
    else:
        schema = {
            "type": "boolean",
            "description": _join(description, "true or false."),
        }
    return schema


def _join(*parts: str) -> str:
    return " ".join(part for part in parts if part)


def compile_filter(channel: Channel, metadata_filter: dict | None) -> Q:
    """Q over Document matching `metadata_filter`; raises FilterError."""
    if metadata_filter is None:
        return Q()
    if not isinstance(metadata_filter, dict):
        raise FilterError(
            "metadata_filter must be an object mapping field names to values, "
            f"or null; got {_shown(metadata_filter)}."
        )
    fields = {field.name: field for field in filter_fields(channel)}
    unknown = [name for name in metadata_filter if name not in fields]
    if unknown:
        raise FilterError(_unknown_fields_message(unknown, sorted(fields)))

    condition = Q()
    latest: list[MetadataField] = []
    for name, value in metadata_filter.items():
        field = fields[name]
        if field.type == FieldType.DATE and value == LATEST:
            latest.append(field)
            continue
        condition &= _field_condition(channel, field, value)
    for field in latest:
        condition &= _latest_condition(channel, field, condition)
    return condition


def _unknown_fields_message(unknown: list[str], allowed: list[str]) -> str:
    parts = []
    for name in unknown[:10]:
        close = difflib.get_close_matches(name[:200], allowed, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        parts.append(f"{_shown(name)}{hint}")
    allowed_text = ", ".join(allowed) if allowed else "none (this channel has none)"
    return (
        f"Unknown filter field {', '.join(parts)}. "
        f"Fields you can filter on: {allowed_text}."
    )


def _field_condition(channel: Channel, field: MetadataField, value) -> Q:
    if field.type in (FieldType.STRING, FieldType.STRING_LIST):
        return _string_condition(channel, field, value)
    if field.type == FieldType.DATE:
        return _date_condition(field, value)
    if field.type == FieldType.NUMBER:
        return _number_condition(field, value)
    return _boolean_condition(field, value)


def _string_condition(channel: Channel, field: MetadataField, value) -> Q:
    wanted = [value] if isinstance(value, str) else value
    if (
        not isinstance(wanted, list)
        or not wanted
        or not all(isinstance(item, str) for item in wanted)
    ):
        raise FilterError(
            f"{field.name}: expected a string or a non-empty list of strings, "
            f"got {_shown(value)}."
        )
    if len(wanted) > MAX_FILTER_VALUES:
        raise FilterError(
            f"{field.name}: at most {MAX_FILTER_VALUES} values; got {len(wanted)}."
        )
    conditions = []
    for item in wanted:
        # jsonb containment (@>) can use the GIN index on Document.metadata.
        target = [item] if field.type == FieldType.STRING_LIST else item
        conditions.append(Q(metadata__contains={field.name: target}))
    documents = Document.objects.for_channel(channel)
    # One indexed probe per value; the full list of values only for the error.
    missing = [
        item
        for item, condition in zip(wanted, conditions, strict=True)
        if not _storable(item) or not documents.filter(condition).exists()
    ]
    if missing:
        in_use = values_in_use(channel, field)
        raise FilterError(_unknown_values_message(field, missing, in_use))
    combined = Q()
    for condition in conditions:
        combined |= condition
    return combined


def _storable(text: str) -> bool:
    """False for text PostgreSQL can't hold (NUL, lone surrogates): no document
    has such a value, and probing for it would fail the query."""
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _unknown_values_message(
    field: MetadataField, missing: list[str], in_use: list[str]
) -> str:
    if not in_use:
        return f"{field.name}: no document has a value for this field yet."
    hints = []
    for item in missing:
        close = difflib.get_close_matches(item[:200], in_use, n=3, cutoff=0.5)
        if not close:
            lowered = item.lower()
            close = [v for v in in_use if lowered in v.lower()][:3]
        suffix = f" (closest: {', '.join(repr(c) for c in close)})" if close else ""
        hints.append(f"{_shown(item)}{suffix}")
    shown = ", ".join(_shown(v) for v in in_use[:20])
    more = f" and {len(in_use) - 20} more" if len(in_use) > 20 else ""
    return (
        f"{field.name}: no document has the value {'; '.join(hints)}. "
        f"Values in use: {shown}{more}."
    )


def _parse_date(field: MetadataField, key: str, value) -> str:
    try:
        return datetime.date.fromisoformat(value).isoformat()
    except (TypeError, ValueError):
        raise FilterError(
            f"{field.name}.{key}: {_shown(value)} is not a date; use YYYY-MM-DD."
        ) from None


def _date_condition(field: MetadataField, value) -> Q:
    if not isinstance(value, dict):
        raise FilterError(
            f'{field.name}: expected {{"start": "YYYY-MM-DD", "end": "YYYY-MM-DD"}} '
            f'(either optional) or "latest", got {_shown(value)}.'
        )
    bounds = _range_bounds(field, value, ("start", "end"))
    start = _parse_date(field, "start", bounds["start"]) if "start" in bounds else None
    end = _parse_date(field, "end", bounds["end"]) if "end" in bounds else None
    if start and end and start > end:
        raise FilterError(f"{field.name}: start {start} is after end {end}.")
    # Dates are stored as ISO strings (clean_metadata), so text order is date order.
    condition = Q(**{f"metadata__{field.name}__isnull": False})
    if start:
        condition &= Q(**{f"metadata__{field.name}__gte": start})
    if end:
        condition &= Q(**{f"metadata__{field.name}__lte": end})
    return condition


def _range_bounds(field: MetadataField, value: dict, keys: tuple[str, str]) -> dict:
    extra = sorted(set(value) - set(keys))
    if extra or not value:
        raise FilterError(
            f"{field.name}: a range takes {keys[0]!r} and/or {keys[1]!r}"
            + (f", not {', '.join(repr(k) for k in extra)}." if extra else ".")
        )
    return {key: value[key] for key in keys if value.get(key) is not None}


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _number_condition(field: MetadataField, value) -> Q:
    if _is_number(value):
        return Q(**{f"metadata__{field.name}": value})
    if not isinstance(value, dict):
        raise FilterError(
            f'{field.name}: expected a number or {{"min": .., "max": ..}}, '
            f"got {_shown(value)}."
        )
    bounds = _range_bounds(field, value, ("min", "max"))
    if not bounds:
        raise FilterError(f"{field.name}: give min, max or both.")
    for key, bound in bounds.items():
        if not _is_number(bound):
            raise FilterError(
                f"{field.name}.{key}: expected a number, got {_shown(bound)}."
            )
    if "min" in bounds and "max" in bounds and bounds["min"] > bounds["max"]:
        raise FilterError(
            f"{field.name}: min {bounds['min']} is greater than max {bounds['max']}."
        )
    condition = Q(**{f"metadata__{field.name}__isnull": False})
    if "min" in bounds:
        condition &= Q(**{f"metadata__{field.name}__gte": bounds["min"]})
    if "max" in bounds:
        condition &= Q(**{f"metadata__{field.name}__lte": bounds["max"]})
    return condition


def _boolean_condition(field: MetadataField, value) -> Q:
    if not isinstance(value, bool):
        raise FilterError(f"{field.name}: expected true or false, got {_shown(value)}.")
    return Q(metadata__contains={field.name: value})


def _latest_condition(channel: Channel, field: MetadataField, others: Q) -> Q:
    """Equal to the newest value of `field` among the channel's ready documents
    that match the other conditions (a subquery, so no extra round trip)."""
    newest = (
        Document.objects.for_channel(channel)
        .ready()
        .filter(others)
        .order_by()
        .values("channel")
        .annotate(newest=Max(KT(f"metadata__{field.name}")))
        .values("newest")
    )
    return Q(Exact(KT(f"metadata__{field.name}"), Subquery(newest)))
