"""Model instances from the admission statement's columns, built once per row version.

Every admission returns the channel's and the key's rows, and building their
model instances (converting the JSON and array columns, `Model.__init__`) cost
a small call more than the checks themselves. An instance is kept per model
and primary key with the exact values it was built from; a row whose values are
all equal to those gets a copy of the kept instance, and any change to any
column (a revocation, an expiry, new scopes, a channel's fields or corpus
version, `last_used_at`) builds a new one. The statement still runs, and every
check reads the values it returned, on every call.

A copy has its own model state (no related objects cached by another request)
and its own JSON and array values (decoded again from the row), so a request
that changes its instance changes nothing another request sees.
"""

from django.db import connection
from django.db.models.base import ModelState

# Enough for every channel and key a busy server admits; past it the kept
# instances are dropped and built again as they come.
KEPT_LIMIT = 512

_kept: dict[tuple[type, object], tuple[tuple, object]] = {}
_layouts: dict[type, tuple[list, list[str], list[tuple[int, str, object]]]] = {}


def _layout(model):
    """The model's concrete fields, their attribute names, and (index,
    attribute name, converter) for each column whose value is converted or
    mutable (JSON, arrays)."""
    layout = _layouts.get(model)
    if layout is None:
        fields = model._meta.concrete_fields
        fresh = [
            (index, field.attname, getattr(field, "from_db_value", None))
            for index, field in enumerate(fields)
            if hasattr(field, "from_db_value")
            or field.get_internal_type() in ("ArrayField", "JSONField")
        ]
        layout = _layouts[model] = (fields, [field.attname for field in fields], fresh)
    return layout


def _convert(converter, value):
    return converter(value, None, connection) if converter is not None else value


def build(model, values):
    """A model instance from its columns' values, converted as the ORM would
    (JSON fields arrive as text)."""
    fields, names, fresh = _layout(model)
    values = list(values)
    for index, _name, converter in fresh:
        values[index] = _convert(converter, values[index])
    return model.from_db(connection.alias, names, values)


def instance(model, values):
    """build(model, values), from the kept instance when the row is unchanged."""
    values = tuple(values)
    key = (model, values[0])
    kept = _kept.get(key)
    if kept is None or kept[0] != values:
        if len(_kept) >= KEPT_LIMIT:
            _kept.clear()
        built = build(model, values)
        _kept[key] = (values, built)
        return _copy(model, built, values)
    return _copy(model, kept[1], values)


def _copy(model, original, values):
    copy = model.__new__(model)
    state = ModelState()
    state.adding, state.db = False, original._state.db
    attributes = dict(original.__dict__)
    attributes["_state"] = state
    for index, name, converter in _layout(model)[2]:
        value = values[index]
        if isinstance(value, list):
            value = list(value)
        attributes[name] = _convert(converter, value)
    copy.__dict__ = attributes
    return copy


def forget() -> None:
    """Drop every kept instance (tests)."""
    _kept.clear()
