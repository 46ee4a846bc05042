"""manage.py backup <dir> [--database-only]"""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from documents.backups import BackupError, backup


class Command(BaseCommand):
    help = (
        "Back up the database (pg_dump) and the stored files its rows name, "
        "consistent with each other, into a new folder; --database-only leaves "
        "the files to the storage's own backup (an S3 bucket's versioning)."
    )

    def add_arguments(self, parser):
        parser.add_argument("folder", type=Path, help="A new or empty folder.")
        parser.add_argument("--database-only", action="store_true")

    def handle(self, *args, folder, database_only, **options):
        try:
            summary = backup(folder, database_only=database_only)
        except BackupError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"Backed up the database and {summary.files} files "
            f"({summary.bytes:,} bytes) to {summary.folder}."
        )
