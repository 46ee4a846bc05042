"""manage.py ingest_worker: django-tasks-db's db_worker plus recovery of
ingestions a dead worker left behind.

Takes every db_worker option. At start, and then every --recovery-interval
seconds, documents whose ingestion was interrupted (their worker was killed) are
queued again (documents.services.recovery).

The worker lowers its own CPU priority (INGEST_WORKER_NICENESS, inherited by the
PDF reader it starts): ingestion is batch work, and on a machine it shares with
the web server, searches should not queue behind page rendering and embedding.
"""

import os
import threading

from django.conf import settings
from django.db import close_old_connections, connection
from django_tasks_db.management.commands.db_worker import Command as DbWorkerCommand

from documents.services.recovery import requeue_interrupted_ingestions


class Command(DbWorkerCommand):
    help = (
        "Run the ingestion worker (db_worker); requeue ingestions interrupted by "
        "a dead worker at start and periodically."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument(
            "--recovery-interval",
            type=float,
            default=60.0,
            help="Seconds between checks for interrupted ingestions (0: at start "
            "only).",
        )

    def handle(self, *args, recovery_interval: float, **options):
        lower_priority(settings.INGEST_WORKER_NICENESS)
        self._recover()
        close_old_connections()
        if recovery_interval > 0:
            stop = threading.Event()
            thread = threading.Thread(
                target=self._recover_every,
                args=(recovery_interval, stop),
                name="ingestion-recovery",
                daemon=True,
            )
            thread.start()
        super().handle(*args, **options)

    def _recover(self) -> None:
        requeued = requeue_interrupted_ingestions()
        if requeued:
            self.stdout.write(
                f"Requeued interrupted ingestions of documents: {requeued}"
            )

    def _recover_every(self, interval: float, stop: threading.Event) -> None:
        while not stop.wait(interval):
            try:
                self._recover()
            except Exception as exc:  # the database may be restarting; try later
                self.stderr.write(f"Recovery check failed: {exc}")
            finally:
                connection.close()  # this thread's own connection


def lower_priority(niceness: int) -> None:
    """Add `niceness` to this process's nice value (0: leave it)."""
    if niceness > 0:
        os.nice(niceness)
