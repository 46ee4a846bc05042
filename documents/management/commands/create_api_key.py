"""manage.py create_api_key: a key for one or more channels, printed once."""

from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from documents.access import COMMAND_LINE
from documents.models import Channel
from documents.services.keys import create_api_key


class Command(BaseCommand):
    help = (
        "Create an API key that opens the given channels. The key is printed once "
        "on standard output (only its digest is stored)."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="Who or what will use the key.")
        parser.add_argument(
            "--channel",
            action="append",
            required=True,
            metavar="SLUG",
            help="A channel the key opens. Repeat for more channels.",
        )
        parser.add_argument(
            "--write",
            action="store_true",
            help="Also allow writes (REST upload, delete, re-ingest). Without it "
            "the key is read-only: every MCP tool, search, answers, REST reads.",
        )
        parser.add_argument(
            "--expires-in-days",
            type=int,
            metavar="DAYS",
            help="Expire the key after this many days (default: never).",
        )

    def handle(self, *args, name, channel, write, expires_in_days, **options):
        slugs = list(dict.fromkeys(channel))
        channels = list(Channel.objects.filter(slug__in=slugs))
        missing = sorted(set(slugs) - {c.slug for c in channels})
        if missing:
            known = ", ".join(Channel.objects.values_list("slug", flat=True))
            raise CommandError(
                f"Unknown channel(s): {', '.join(missing)}. Known: {known or 'none'}."
            )
        if expires_in_days is not None and expires_in_days < 1:
            raise CommandError("--expires-in-days must be at least 1.")
        expires_at = (
            timezone.now() + timedelta(days=expires_in_days)
            if expires_in_days
            else None
        )
        new = create_api_key(
            actor=COMMAND_LINE,
            name=name,
            channels=channels,
            expires_at=expires_at,
            scopes=["read", "write"] if write else ["read"],
        )
        self.stderr.write(
            f"Created {'a read and write' if write else 'a read-only'} API key "
            f"{new.api_key.prefix}… “{name}” for {', '.join(slugs)}"
            + (f", expiring {expires_at:%Y-%m-%d %H:%M} UTC" if expires_at else "")
            + ". It is shown once:"
        )
        self.stdout.write(new.raw_key)
