"""manage.py create_channel: a channel and its metadata fields from the shell."""

import json
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from documents.access import COMMAND_LINE
from documents.models import Channel, MetadataField
from documents.services.channels import create_channel

FIELD_FLAGS = {
    "filterable": "filterable",
    "required": "required",
    "sent_with_chunks": "sent_with_chunks",
}
# Older names of the same flags: `retrieve` (this command's, before), and the
# reference's attribute name, in definitions. A definition's older
# `tool_<switch>: true|false` options become entries of `tool_switches`.
FLAG_ALIASES = {
    "retrieve": "sent_with_chunks",
    "enable_in_mcp_retrieve_chunks": "sent_with_chunks",
}


def parse_field(spec: str) -> dict:
    """`name:type[:flag,flag]`, flags among filterable, required,
    sent_with_chunks (or its older name, retrieve)."""
    parts = spec.split(":")
    if len(parts) not in (2, 3) or not all(parts[:2]):
        raise CommandError(
            f"--field {spec!r}: use name:type or name:type:flag,flag "
            f"(flags: {', '.join(FIELD_FLAGS)})."
        )
    name, kind = parts[0], parts[1]
    if kind not in MetadataField.FieldType.values:
        raise CommandError(
            f"--field {spec!r}: unknown type {kind!r}; use one of "
            f"{', '.join(MetadataField.FieldType.values)}."
        )
    field = {"name": name, "type": kind}
    for flag in filter(None, (parts[2] if len(parts) == 3 else "").split(",")):
        flag = FLAG_ALIASES.get(flag, flag)
        if flag not in FIELD_FLAGS:
            raise CommandError(
                f"--field {spec!r}: unknown flag {flag!r}; use "
                f"{', '.join(FIELD_FLAGS)}."
            )
        field[FIELD_FLAGS[flag]] = True
    return field


def gather_tool_switches(spec: dict) -> dict:
    """A definition's older `tool_<switch>` options as `tool_switches` entries
    (channels had a field per tool before tools brought their switch)."""
    older = [key for key in spec if key.startswith("tool_") and key != "tool_switches"]
    if not older:
        return spec
    chosen = spec.get("tool_switches", {})
    if not isinstance(chosen, dict):
        raise CommandError('tool_switches: use an object like {"rag_search": false}.')
    switches = {key.removeprefix("tool_"): spec[key] for key in older}
    rest = {key: value for key, value in spec.items() if key not in older}
    return rest | {"tool_switches": chosen | switches}


def parse_sort(spec: str) -> dict:
    """`field[:asc|desc]` (desc when omitted)."""
    field, _, direction = spec.partition(":")
    direction = direction or "desc"
    if not field or direction not in ("asc", "desc"):
        raise CommandError(
            f"--newest-sort {spec!r}: use field, field:desc or field:asc."
        )
    return {"field": field, "direction": direction}


class Command(BaseCommand):
    help = (
        "Create a channel with its metadata fields, from options or from a JSON "
        "definition (the format of demo/channel.json, without its documents)."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", nargs="?", help="The channel's slug (/mcp/<slug>).")
        parser.add_argument("--name", help="Display name (default: from the slug).")
        parser.add_argument("--description", default="")
        parser.add_argument(
            "--field",
            action="append",
            default=[],
            metavar="NAME:TYPE[:FLAGS]",
            help="A metadata field, e.g. published:date:filterable or "
            "topics:string_list:filterable,sent_with_chunks (flags: filterable, "
            "required, sent_with_chunks). Repeat for more fields.",
        )
        parser.add_argument(
            "--newest-sort",
            action="append",
            default=[],
            metavar="FIELD[:asc|desc]",
            help="A field that sorts documents newest first. Repeat to break ties.",
        )
        parser.add_argument(
            "--definition",
            type=Path,
            help="A JSON file with slug, name, fields and other channel options.",
        )

    def handle(
        self, *args, slug, name, description, field, newest_sort, definition, **options
    ):
        if definition:
            try:
                spec = json.loads(definition.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise CommandError(f"Cannot read {definition}: {exc}") from None
            spec.pop("documents", None)
            spec["fields"] = [
                {FLAG_ALIASES.get(key, key): value for key, value in field.items()}
                if isinstance(field, dict)
                else field
                for field in spec.get("fields", [])
            ]
            spec = gather_tool_switches(spec)
            if slug:
                spec["slug"] = slug
        elif slug:
            spec = {
                "slug": slug,
                "name": name or slug.replace("-", " ").title(),
                "description": description,
                "fields": [parse_field(item) for item in field],
                "newest_sort": [parse_sort(item) for item in newest_sort],
            }
        else:
            raise CommandError("Give a slug, or --definition FILE.")
        if Channel.objects.filter(slug=spec.get("slug")).exists():
            raise CommandError(f"A channel with the slug {spec['slug']!r} exists.")
        try:
            channel = create_channel(**spec, actor=COMMAND_LINE)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        except TypeError as exc:
            raise CommandError(f"Unknown channel option in the definition: {exc}")
        fields = ", ".join(
            f"{f.name} ({f.type})" for f in channel.metadata_fields.all()
        )
        self.stdout.write(
            f"Created channel {channel.slug!r} “{channel.name}” "
            f"with fields: {fields or 'none'}. MCP path: {channel.mcp_path}"
        )
