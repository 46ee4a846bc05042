"""Validation of a document's metadata values against its channel's field rows."""

import datetime
from collections.abc import Iterable

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator

from documents.models import MetadataField

FieldType = MetadataField.FieldType


def _clean_value(field: MetadataField, value):
    kind = field.type
    if kind == FieldType.STRING:
        if not isinstance(value, str):
            raise ValidationError(f"{field.name}: expected a string.")
        return value.strip()
    if kind == FieldType.STRING_LIST:
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",")]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValidationError(f"{field.name}: expected a list of strings.")
        return [v.strip() for v in value if v.strip()]
    if kind == FieldType.DATE:
        if isinstance(value, datetime.date):
            return value.isoformat()[:10]
        try:
            return datetime.date.fromisoformat(str(value)).isoformat()
        except ValueError:
            raise ValidationError(
                f"{field.name}: {value!r} is not a date (use YYYY-MM-DD)."
            ) from None
    if kind == FieldType.NUMBER:
        if isinstance(value, bool):
            raise ValidationError(f"{field.name}: expected a number.")
        if isinstance(value, (int, float)):
            return value
        try:
            number = float(str(value))
        except ValueError:
            raise ValidationError(f"{field.name}: {value!r} is not a number.") from None
        return int(number) if number.is_integer() else number
    if kind == FieldType.BOOLEAN:
        if isinstance(value, bool):
            return value
        lowered = str(value).strip().lower()
        if lowered in ("true", "1", "yes"):
            return True
        if lowered in ("false", "0", "no"):
            return False
        raise ValidationError(f"{field.name}: {value!r} is not true or false.")
    if kind == FieldType.URL:
        if not isinstance(value, str):
            raise ValidationError(f"{field.name}: expected a URL.")
        try:
            URLValidator(schemes=["http", "https"])(value)
        except ValidationError:
            raise ValidationError(
                f"{field.name}: {value!r} is not an http(s) URL."
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
        errors.append(f"Unknown field(s): {', '.join(unknown)}. Allowed: {allowed}.")
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
