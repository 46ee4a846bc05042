"""Inputs of the channel form that offer the channel's own metadata fields:
`newest_sort` as rows of (field, direction) and `filterable_fields` as a
checkbox per filterable field, instead of JSON typed into a box.

The templates are in documents/templates/documents/widgets/ (the form
renderer reads apps' templates only). The choices come from the fields saved
with the channel; a script
(documents/admin/channel_fields.js) keeps them in step with the field rows being
edited below, so a field added in the same save can be picked at once. Whether
a name is one of the channel's fields is checked with the rows being saved
(channels.MetadataFieldFormSet), as before.
"""

import re

from django import forms
from django.core.exceptions import ValidationError

FIELD_NAME = re.compile(r"^[-a-zA-Z0-9_]+$")
DIRECTIONS = [
    ("desc", "descending: latest, highest first"),
    ("asc", "ascending: earliest, lowest first"),
]
SORT_ROWS = 3
SCRIPT = "documents/admin/channel_fields.js"


def _check_name(name: str) -> None:
    if not FIELD_NAME.match(name):
        raise ValidationError(f"{name!r} is not a field name.", code="invalid")


class NewestSortWidget(forms.MultiWidget):
    """Rows of a field select and a direction select; row one sorts, the next
    break ties."""

    template_name = "documents/widgets/newest_sort.html"

    def __init__(self, field_names: list[str], rows: int = SORT_ROWS):
        self.field_names = field_names
        widgets = []
        for _ in range(rows):
            widgets += [
                forms.Select(attrs={"data-quire-field-choice": "any"}),
                forms.Select(choices=DIRECTIONS),
            ]
        super().__init__(widgets)

    def decompress(self, value) -> list:
        values: list = []
        for item in value if isinstance(value, list) else []:
            if isinstance(item, dict):
                values += [item.get("field", ""), item.get("direction", "desc")]
        rows = len(self.widgets) // 2
        values += ["", "desc"] * (rows - len(values) // 2)
        return values[: rows * 2]

    def get_context(self, name, value, attrs):
        if not isinstance(value, list) or (value and isinstance(value[0], dict)):
            value = self.decompress(value)
        chosen = [item for item in value[0::2] if item]
        names = self.field_names + [n for n in chosen if n not in self.field_names]
        for widget in self.widgets[0::2]:
            widget.choices = [("", "—")] + [(n, n) for n in names]
        context = super().get_context(name, value, attrs)
        subwidgets = context["widget"]["subwidgets"]
        context["rows"] = list(zip(subwidgets[0::2], subwidgets[1::2], strict=True))
        return context

    class Media:
        js = [SCRIPT]


class NewestSortField(forms.MultiValueField):
    """A list of {"field": name, "direction": "asc" | "desc"}, rows without a
    field left out."""

    def __init__(self, *, field_names: list[str], rows: int = SORT_ROWS, **kwargs):
        fields = []
        for _ in range(rows):
            fields += [
                forms.CharField(required=False),
                forms.ChoiceField(choices=DIRECTIONS, required=False),
            ]
        super().__init__(
            fields,
            widget=NewestSortWidget(field_names, rows),
            require_all_fields=False,
            required=False,
            **kwargs,
        )

    def compress(self, data_list) -> list[dict]:
        sort = []
        for name, direction in zip(data_list[0::2], data_list[1::2], strict=True):
            if name:
                _check_name(name)
                sort.append({"field": name, "direction": direction or "desc"})
        names = [item["field"] for item in sort]
        if len(set(names)) < len(names):
            raise ValidationError("Name each field once.", code="duplicate")
        return sort

    def has_changed(self, initial, data) -> bool:
        try:
            return self.clean(data) != (initial or [])
        except ValidationError:
            return True


class FilterableFieldsWidget(forms.CheckboxSelectMultiple):
    """A checkbox per filterable field of the channel."""

    template_name = "documents/widgets/filterable_fields.html"

    def __init__(self, field_names: list[str]):
        super().__init__()
        self.field_names = field_names

    def get_context(self, name, value, attrs):
        chosen = [n for n in value or [] if isinstance(n, str)]
        names = self.field_names + [n for n in chosen if n not in self.field_names]
        self.choices = [(n, n) for n in names]
        return super().get_context(name, value, attrs)

    class Media:
        js = [SCRIPT]


class FilterableFieldsField(forms.Field):
    """A list of field names (which must be filterable fields of the channel:
    checked with the field rows)."""

    def __init__(self, *, field_names: list[str], **kwargs):
        super().__init__(
            widget=FilterableFieldsWidget(field_names), required=False, **kwargs
        )

    def to_python(self, value) -> list[str]:
        if not value:
            return []
        if not isinstance(value, list | tuple):
            raise ValidationError("Tick the fields to offer.", code="invalid")
        names = [str(name) for name in value]
        for name in names:
            _check_name(name)
        return list(dict.fromkeys(names))

    def has_changed(self, initial, data) -> bool:
        try:
            return self.to_python(data) != list(initial or [])
        except ValidationError:
            return True
