"""manage.py sync_source <channel> [<source>] [--queue]"""

from django.core.management.base import BaseCommand, CommandError

from documents.access import COMMAND_LINE
from documents.models import Channel, SourceSync
from documents.services.sources import channel_source, request_sync
from documents.services.sync import run_sync, summary


class Command(BaseCommand):
    help = (
        "Sync a channel's sources (or the one named) now and print what changed: "
        "added, revised, unchanged, removed, failed. New files and revisions are "
        "ingested by the worker (manage.py ingest_worker). With --queue the sync "
        "itself is left to the worker."
    )

    def add_arguments(self, parser):
        parser.add_argument("channel", help="The channel's slug.")
        parser.add_argument("source", nargs="?", help="The source's name.")
        parser.add_argument(
            "--queue", action="store_true", help="Only queue the sync for the worker."
        )

    def handle(self, *args, channel, source, queue, **options):
        found = Channel.objects.filter(slug=channel).first()
        if found is None:
            raise CommandError(f"No channel with the slug {channel!r}.")
        sources = channel_source(found, source)
        if not sources:
            raise CommandError(
                f"Channel {channel!r} has no source named {source!r}."
                if source
                else f"Channel {channel!r} has no sources (manage.py add_source)."
            )
        failed = False
        for item in sources:
            sync, created = request_sync(
                source=item,
                actor=COMMAND_LINE,
                trigger=SourceSync.Trigger.COMMAND,
                enqueue=queue,
            )
            label = f"{item.name}: " if len(sources) > 1 or not source else ""
            if not created:
                self.stdout.write(
                    f"{label}a sync is already {sync.get_status_display().lower()} "
                    f"(sync {sync.pk}); not started again."
                )
                continue
            if queue:
                self.stdout.write(f"{label}queued (sync {sync.pk}).")
                continue
            sync = run_sync(sync.pk)
            self.stdout.write(f"{label}{summary(sync)}")
            if sync.reason:
                self.stdout.write(f"{label}{sync.reason}")
            for error in sync.errors:
                self.stderr.write(f"  {error['key']}: {error['reason']}")
            failed = failed or sync.status == SourceSync.Status.FAILED
        if failed:
            raise CommandError("A sync failed; see the reason above.")
