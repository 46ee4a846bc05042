"""manage.py add_source <channel> <kind> <location> [--name] [--store]
[--every MINUTES] [--delete-removed] [--map FIELD=NAME ...]"""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from documents.access import COMMAND_LINE
from documents.models import Channel, Source
from documents.services.sources import describe, save_source
from documents.sources.registry import KINDS, config_for


class Command(BaseCommand):
    help = (
        "Add a source to a channel: a folder under SOURCE_FOLDERS, an S3 bucket "
        "and prefix of a store in SOURCE_S3_STORES (bucket/prefix), or a website "
        "(a start page or sitemap URL of a host SOURCE_WEB_HOSTS allows). Sync it "
        "with manage.py sync_source, or on a schedule with --every."
    )

    def add_arguments(self, parser):
        parser.add_argument("channel", help="The channel's slug.")
        parser.add_argument("kind", choices=sorted(KINDS))
        parser.add_argument("location", help="A folder path, bucket/prefix, or URL.")
        parser.add_argument("--name", help="The source's name (default: the kind).")
        parser.add_argument(
            "--store", default="", help="S3: the store's name in SOURCE_S3_STORES."
        )
        parser.add_argument(
            "--max-pages",
            type=int,
            help="Web: fewest of this and SOURCE_WEB_MAX_PAGES.",
        )
        parser.add_argument(
            "--every", type=int, metavar="MINUTES", help="Sync every MINUTES minutes."
        )
        parser.add_argument(
            "--delete-removed",
            action="store_true",
            help="Delete a document when its entry is gone from the source.",
        )
        parser.add_argument(
            "--map",
            action="append",
            default=[],
            metavar="FIELD=NAME",
            help="Fill the channel field FIELD from the source's value NAME "
            "(path:N for the Nth folder); repeatable.",
        )

    def handle(
        self,
        *args,
        channel,
        kind,
        location,
        name,
        store,
        max_pages,
        every,
        delete_removed,
        map,
        **options,
    ):
        found = Channel.objects.filter(slug=channel).first()
        if found is None:
            raise CommandError(f"No channel with the slug {channel!r}.")
        mapping = {}
        for pair in map:
            field_name, sep, value = pair.partition("=")
            if not sep or not field_name or not value:
                raise CommandError(f"--map {pair!r}: write FIELD=NAME.")
            mapping[field_name] = value
        source = Source(
            channel=found,
            name=name or kind,
            kind=kind,
            config=config_for(kind, location, store=store, max_pages=max_pages),
            metadata_map=mapping,
            every_minutes=every,
            delete_removed=delete_removed,
        )
        if Source.objects.filter(channel=found, name=source.name).exists():
            raise CommandError(
                f"Channel {channel!r} has a source named {source.name!r}; "
                "pick another with --name."
            )
        try:
            save_source(source=source, actor=COMMAND_LINE)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        schedule = f", every {every} minutes" if every else ""
        self.stdout.write(
            f"Added source {source.name!r} ({describe(source)}{schedule}) to {channel}."
        )
