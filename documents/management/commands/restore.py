"""manage.py restore <dir>"""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from documents.backups import BackupError, restore


class Command(BaseCommand):
    help = (
        "Restore a backup made by manage.py backup into this installation, which "
        "must have no channels or documents: the database, then the files, under "
        "their own names."
    )

    def add_arguments(self, parser):
        parser.add_argument("folder", type=Path, help="The backup's folder.")

    def handle(self, *args, folder, **options):
        try:
            summary = restore(folder)
        except BackupError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"Restored the database and {summary.files} files from {summary.folder}."
        )
