"""manage.py load_demo: the demo channel, its documents, an admin login and a key."""

from django.core.management.base import BaseCommand

from demo.loader import describe, load_demo


class Command(BaseCommand):
    help = (
        "Load the demo channel and its documents (idempotent), ensure the admin "
        "login and print a fresh demo API key."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--base-url",
            default="http://127.0.0.1:8000",
            help="Server address used in the printed URLs.",
        )

    def handle(self, *args, base_url, **options):
        site = load_demo(log=self.stdout.write)
        ready = sum(d.status == d.Status.READY for d in site.documents)
        self.stdout.write(
            f"Demo channel: {ready}/{len(site.documents)} documents ready."
        )
        for line in describe(site, base_url.rstrip("/")):
            self.stdout.write(line)
