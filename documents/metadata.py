"""Validation of a document's metadata values against its channel's field rows."""

import datetime
import math
from collections.abc import Iterable

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator

from documents.models import MetadataField

FieldType = MetadataField.FieldType
# Numbers beyond this lose precision in JSON clients and PostgreSQL's casts.
MAX_INTEGER = 2**53


def _shown(value) -> str:
    """A value quoted in an error message, cut short."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _bounded(field: MetadataField, text: str) -> str:
    text = text.strip()
    limit = settings.METADATA_VALUE_MAX_CHARS
    if len(text) > limit:
        raise ValidationError(
            f"{field.name}: a value is at most {limit} characters; this one has "
            f"{len(text)}."
        )
    return text


def _clean_value(field: MetadataField, value):
    kind = field.type
    if kind == FieldType.STRING:
        if not isinstance(value, str):
            raise ValidationError(f"{field.name}: expected a string.")
        return _bounded(field, value)
    if kind == FieldType.STRING_LIST:
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",")]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValidationError(f"{field.name}: expected a list of strings.")
        items = [_bounded(field, v) for v in value if v.strip()]
        limit = settings.METADATA_LIST_MAX_ITEMS
        if len(items) > limit:
            raise ValidationError(
                f"{field.name}: at most {limit} values; this list has {len(items)}."
            )
        return items
    if kind == FieldType.DATE:
        if isinstance(value, datetime.date):
            return value.isoformat()[:10]
        try:
            return datetime.date.fromisoformat(str(value)).isoformat()
        except ValueError:
            raise ValidationError(
                f"{field.name}: {_shown(value)} is not a date (use YYYY-MM-DD)."
            ) from None
    if kind == FieldType.NUMBER:
        if isinstance(value, bool):
            raise ValidationError(f"{field.name}: expected a number.")
        if isinstance(value, int) and abs(value) <= MAX_INTEGER:
            return value
        try:
            number = float(value if isinstance(value, (int, float)) else str(value))
        except (ValueError, OverflowError):
            raise ValidationError(
                f"{field.name}: {_shown(value)} is not a number."
            ) from None
        if not math.isfinite(number) or abs(number) > MAX_INTEGER:
            raise ValidationError(
                f"{field.name}: {_shown(value)} is out of range (at most "
                f"{MAX_INTEGER:.0e} either way)."
            )
        return int(number) if number.is_integer() else number
    if kind == FieldType.BOOLEAN:
        if isinstance(value, bool):
            return value
        lowered = str(value).strip().lower()
        if lowered in ("true", "1", "yes"):
            return True
        if lowered in ("false", "0", "no"):
            return False
        raise ValidationError(f"{field.name}: {_shown(value)} is not true or false.")
    if kind == FieldType.URL:
        if not isinstance(value, str):
            raise ValidationError(f"{field.name}: expected a URL.")
        value = _bounded(field, value)
        try:
            URLValidator(schemes=["http", "https"])(value)
        except ValidationError:
            raise ValidationError(
                f"{field.name}: {_shown(value)} is not an http(s) URL."
            ) from None
        return value
    raise ValidationError(f"{field.name}: unknown field type {kind!r}.")


def clean_metadata(fields: Iterable[MetadataField], values: dict | None) -> dict:
    """Validated, normalised metadata for a document.

    Unknown keys, wrong types and missing required values are errors; empty values
    ("" or None) are dropped. Raises ValidationError with one message per problem.
    """
    if values is None:
        values = {}
    if not isinstance(values, dict):
        raise ValidationError("Metadata must be a JSON object of field values.")
    by_name = {field.name: field for field in fields}
    errors: list[str] = []
    unknown = sorted(set(values) - set(by_name))
    if unknown:
        allowed = ", ".join(sorted(by_name)) or "none"
        shown = ", ".join(name[:60] for name in unknown[:10])
        more = f" and {len(unknown) - 10} more" if len(unknown) > 10 else ""
        errors.append(f"Unknown field(s): {shown}{more}. Allowed: {allowed}.")
    cleaned: dict = {}
    for name, field in by_name.items():
        value = values.get(name)
        if value is None or value == "" or value == []:
            if field.required:
                errors.append(f"{name}: a value is required.")
            continue
        try:
            cleaned[name] = _clean_value(field, value)
        except ValidationError as exc:
            errors.extend(exc.messages)
    if errors:
        raise ValidationError(errors)
    return cleaned
