"""manage.py ingest_worker: django-tasks-db's db_worker, with a lease per
running task, a bounded graceful stop, and recovery of the tasks a dead worker
left behind.

Takes every db_worker option. At start, and then every --recovery-interval
seconds, tasks of any kind whose worker died are queued again
(documents.services.recovery), the sources whose schedule is due get a
sync queued (documents.services.sources), and what abandoned sign-ins left
(expired codes, unused client registrations) is deleted
(documents.services.grants). Every WORKER_HEARTBEAT_SECONDS the
worker records that it is alive (documents.services.workers), which /readyz
and the metrics read. A stop (SIGTERM, SIGINT) lets the running task
finish for up to WORKER_STOP_TIMEOUT seconds, then hands it back to the queue
(documents.worker).

The worker lowers its own CPU priority (INGEST_WORKER_NICENESS, inherited by the
PDF reader it starts): ingestion is batch work, and on a machine it shares with
the web server, searches should not queue behind page rendering and embedding.
"""

import os
import threading
import time

from django.conf import settings
from django.core.management.base import CommandError
from django.db import close_old_connections, connection
from django.utils import timezone
from django.utils.autoreload import DJANGO_AUTORELOAD_ENV, run_with_reloader
from django_tasks_db.management.commands.db_worker import Command as DbWorkerCommand

from documents.ingestion.parsers import start_reader
from documents.services import workers
from documents.services.grants import clear_sign_in_leftovers
from documents.services.recovery import requeue_interrupted_tasks
from documents.services.sources import enqueue_due_syncs
from documents.worker import LeasedWorker


class Command(DbWorkerCommand):
    help = (
        "Run the task worker (db_worker with task leases and a bounded stop); "
        "requeue tasks a dead worker left running, at start and periodically."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument(
            "--recovery-interval",
            type=float,
            default=60.0,
            help="Seconds between checks for interrupted tasks and due source "
            "syncs (0: at start only).",
        )

    def handle(
        self,
        *,
        verbosity: int,
        queue_name: str,
        interval: float,
        batch: bool,
        backend_name: str,
        startup_delay: bool,
        reload: bool,
        max_tasks: int | None,
        worker_id: str,
        exclude_queues: str,
        recovery_interval: float,
        **options,
    ):
        self.configure_logging(verbosity)
        if exclude_queues and "*" not in queue_name.split(","):
            raise CommandError("--exclude-queues can only be used with --queue-name=*")
        lower_priority(settings.INGEST_WORKER_NICENESS)
        self._recover()
        close_old_connections()
        if recovery_interval > 0:
            threading.Thread(
                target=self._recover_every,
                args=(recovery_interval,),
                name="task-recovery",
                daemon=True,
            ).start()
        stopping = threading.Event()
        heartbeat = threading.Thread(
            target=self._beat_every,
            args=(worker_id, settings.WORKER_HEARTBEAT_SECONDS, stopping),
            name="heartbeat",
            daemon=True,
        )
        heartbeat.start()
        self.worker = LeasedWorker(
            stop_timeout=settings.WORKER_STOP_TIMEOUT,
            queue_names=queue_name.split(","),
            excluded_queue_names=exclude_queues.split(",") if exclude_queues else [],
            interval=interval,
            batch=batch,
            backend_name=backend_name,
            startup_delay=startup_delay,
            max_tasks=max_tasks,
            worker_id=worker_id,
        )
        try:
            if reload and not batch:
                if os.environ.get(DJANGO_AUTORELOAD_ENV) == "true":
                    self.worker.configure_signals()
                    start_reader()
                run_with_reloader(self.worker.run)
            else:
                self.worker.configure_signals()
                start_reader()
                self.worker.run()
        finally:
            stopping.set()
            heartbeat.join()
            try:
                workers.stopped(worker_id)
            except Exception as exc:  # the database may be gone already
                self.stderr.write(f"Could not record the stop: {exc}")

    def _recover(self) -> None:
        requeued = requeue_interrupted_tasks()
        if requeued:
            self.stdout.write(f"Requeued interrupted tasks: {', '.join(requeued)}")
        due = enqueue_due_syncs()
        if due:
            names = ", ".join(sync.source.name for sync in due)
            self.stdout.write(f"Queued scheduled syncs: {names}")
        cleared = clear_sign_in_leftovers()
        if cleared.clients:
            self.stdout.write(f"Removed unused sign-in clients: {cleared.clients}")

    def _beat_every(
        self, worker_id: str, interval: float, stopping: threading.Event
    ) -> None:
        """Beat until the worker stops (it then deletes its heartbeat)."""
        started_at = timezone.now()
        while not stopping.is_set():
            try:
                workers.beat(worker_id, started_at=started_at)
            except Exception as exc:  # the database may be restarting; try later
                self.stderr.write(f"Heartbeat failed: {exc}")
            finally:
                connection.close()  # this thread's own connection
            stopping.wait(interval)

    def _recover_every(self, interval: float) -> None:
        while True:
            time.sleep(interval)
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
