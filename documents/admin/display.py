"""How the admin's lists show values: status badges, short dates with the full
one on hover, excerpts with the full text on hover, human sizes."""

from datetime import date, datetime

from django.contrib import admin
from django.template.defaultfilters import filesizeformat
from django.utils import formats, timezone
from django.utils.dateparse import parse_date
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator

from documents.models import MetadataField
from documents.results import public_url

FieldType = MetadataField.FieldType

# The colour of a badge, by what its word means.
TONES = {
    "ready": "good",
    "active": "good",
    "ok": "good",
    "processing": "busy",
    "pending": "quiet",
    "expired": "quiet",
    "failed": "bad",
    "revoked": "bad",
    "refused": "bad",
}


def badge(value: str, label: str | None = None) -> str:
    """`label` (or `value`) in a coloured pill picked by `value`."""
    return format_html(
        "<span class='quire-badge quire-badge-{}'>{}</span>",
        TONES.get(value, "quiet"),
        label or value,
    )


def short_datetime(value: datetime | None, *, with_time: bool = True) -> str:
    """2026-11-30 16:45 (or just the date), the full date and time on hover."""
    if value is None:
        return "-"
    local = timezone.localtime(value)
    return format_html(
        "<time datetime='{}' title='{}'>{}</time>",
        value.isoformat(),
        formats.date_format(local, "DATETIME_FORMAT"),
        local.strftime("%Y-%m-%d %H:%M" if with_time else "%Y-%m-%d"),
    )


def excerpt(text: str, chars: int) -> str:
    """The start of `text`, the whole of it on hover when it was cut."""
    short = Truncator(text).chars(chars)
    if short == text:
        return text or "-"
    return format_html("<span title='{}'>{}</span>", text, short)


def metadata_value(value, field_type: str | None) -> str:
    """One metadata value as its field's type reads: a date as a date, a list
    as chips, yes or no, a web address as a link."""
    if value is None or value == "" or value == []:
        return format_html("<span class='quire-muted'>{}</span>", "not set")
    if isinstance(value, list):
        return format_html_join(
            " ", "<span class='quire-chip'>{}</span>", ((item,) for item in value)
        )
    if field_type == FieldType.BOOLEAN or isinstance(value, bool):
        return "yes" if value else "no"
    if field_type == FieldType.DATE and isinstance(value, str):
        day = parse_date(value) if len(value) == 10 else None
        if isinstance(day, date):
            return format_html(
                "<time datetime='{}'>{}</time>", value, formats.date_format(day)
            )
    if field_type == FieldType.URL and isinstance(value, str):
        url = public_url(value)
        if url is not None:
            return format_html(
                "<a href='{}' rel='noreferrer noopener'>{}</a>", url, url
            )
    if isinstance(value, dict):
        return format_html_join(
            "; ", "{}: {}", ((key, item) for key, item in value.items())
        )
    return format_html("{}", value)


def metadata_list(metadata: dict, fields: list[MetadataField]) -> str:
    """A document's metadata as labelled fields, in the channel's field order
    (values of fields the channel no longer has after them)."""
    types = {field.name: field.type for field in fields}
    names = [field.name for field in fields if field.name in metadata]
    names += [name for name in metadata if name not in types]
    if not names:
        return "-"
    return format_html(
        "<dl class='quire-fields'>{}</dl>",
        format_html_join(
            "",
            "<dt>{}</dt><dd>{}</dd>",
            (
                (
                    name.replace("_", " "),
                    metadata_value(metadata[name], types.get(name)),
                )
                for name in names
            ),
        ),
    )


def human_size(size: int) -> str:
    """1.2 MB, 713.4 KB, 17 bytes."""
    return filesizeformat(size).replace("\xa0", " ")


class CredentialColumns:
    """The list columns API keys and sign-in grants share: scopes, created,
    last used and a state badge (from the admin's own `state`)."""

    @admin.display(description="Scopes")
    def scope_list(self, credential) -> str:
        return " + ".join(credential.scopes)

    @admin.display(description="State")
    def state_badge(self, credential) -> str:
        return badge(self.state(credential))

    @admin.display(description="Created", ordering="created_at")
    def created(self, credential) -> str:
        return short_datetime(credential.created_at, with_time=False)

    @admin.display(description="Last used", ordering="last_used_at")
    def last_used(self, credential) -> str:
        return short_datetime(credential.last_used_at)
