"""The task worker `manage.py ingest_worker` runs: django-tasks-db's worker,
with a lease per running task and a bounded graceful stop.

Each task runs while the worker holds the task row's lease
(services/recovery.py), so any worker's recovery can tell a task whose worker
died from one that is still running. On SIGTERM or SIGINT the worker stops
taking tasks and gives the running one `stop_timeout` seconds
(WORKER_STOP_TIMEOUT) to finish; past that, the task is interrupted
(`WorkerStopped`), its row is recorded failed and its work is queued again, and
the worker exits. A second signal hands the task back at once.
"""

import logging
import signal
from types import FrameType

from django.tasks import TaskResultStatus
from django_tasks_db.management.commands.db_worker import Worker
from django_tasks_db.models import DBTaskResult

from documents.services import recovery

logger = logging.getLogger(__name__)

STOPPED_EXCEPTIONS = {
    f"{recovery.WorkerStopped.__module__}.{recovery.WorkerStopped.__qualname__}",
    # db_worker's answer to a second signal during a task.
    f"{SystemExit.__module__}.{SystemExit.__qualname__}",
}


class LeasedWorker(Worker):
    """db_worker's Worker, holding each task's lease while it runs it and
    handing back a task a stop interrupts."""

    def __init__(self, *, stop_timeout: float, **options):
        super().__init__(**options)
        self.stop_timeout = stop_timeout
        self.handed_back: list[str] = []

    def configure_signals(self) -> None:
        super().configure_signals()
        signal.signal(signal.SIGALRM, self._interrupt_task)

    def reset_signals(self) -> None:
        super().reset_signals()
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)

    def shutdown(self, signum: int, frame: FrameType | None) -> None:
        first_during_task = self.running and self.running_task
        super().shutdown(signum, frame)
        if first_during_task:
            if self.stop_timeout > 0:
                signal.setitimer(signal.ITIMER_REAL, self.stop_timeout)
            else:
                self._interrupt_task(signal.SIGALRM, frame)

    def _interrupt_task(self, signum: int, frame: FrameType | None) -> None:
        if self.running_task:
            raise recovery.WorkerStopped(recovery.WORKER_STOPPED)

    def run_task(self, db_task_result: DBTaskResult) -> None:
        with recovery.task_lease(db_task_result.pk):
            if not recovery.still_running(db_task_result):
                logger.warning(
                    "Task %s was recovered before it started here; skipped",
                    db_task_result.pk,
                )
                return
            try:
                super().run_task(db_task_result)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        if not self.running:
            self._hand_back_if_stopped(db_task_result)

    def _hand_back_if_stopped(self, db_task_result: DBTaskResult) -> None:
        db_task_result.refresh_from_db(fields=["status", "exception_class_path"])
        if (
            db_task_result.status == TaskResultStatus.FAILED
            and db_task_result.exception_class_path in STOPPED_EXCEPTIONS
        ):
            handed = recovery.hand_back(db_task_result)
            self.handed_back.append(handed)
            logger.warning("Stopped before it finished; queued again: %s", handed)
