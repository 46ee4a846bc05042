"""runquire's lifecycle: the web server and INGEST_WORKERS ingestion workers
start, and Ctrl-C (SIGINT to the whole process group, as a terminal sends it)
stops them all with status 0 and nothing on the terminal that reads as an
error; under make, on a real pseudo-terminal, make ends with status 0 too."""

import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from io import StringIO
from pathlib import Path

import psutil
import pytest
from django.core.management import CommandError, call_command

from mcp_endpoint.tests import live

REPO = Path(__file__).resolve().parents[2]
READY = "Press Ctrl-C to stop."
WORKER_STARTED = "Starting worker"


def ready(output: str) -> bool:
    """runquire answered and both ingestion workers are polling for tasks."""
    return READY in output and output.count(WORKER_STARTED) == 2


# What a failed stop printed: a traceback, CommandError, make's "*** ... Error 1"
# or "*** ... Interrupt". (The workers' "Received Interrupt - shutting down
# gracefully" is a WARNING line, and expected.)
ERROR_TEXT = re.compile(r"Traceback|Error|ERROR|make: \*\*\*")
# Makes the pseudo-terminal on stdin the controlling terminal of a new session,
# then runs the command: what a terminal emulator does for its shell.
ON_TERMINAL = (
    "import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
    "os.execvp(sys.argv[1], sys.argv[1:])"
)
STARTUP_SECONDS = 120


def test_runquire_refuses_a_port_in_use(db):
    """runquire stops before starting anything when its port is taken, and says
    how to pick another."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(CommandError, match="PORT="):
            call_command("runquire", "--port", str(port), stdout=StringIO())


class Launch:
    """`manage.py runquire` in a session of its own, its output collected."""

    def __init__(self, env: dict[str, str]):
        self.port = live.free_port()
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "runquire", "--port", str(self.port)],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def wait_until_ready(self) -> None:
        deadline = time.monotonic() + STARTUP_SECONDS
        while not ready(self.output):
            assert self.process.poll() is None, self.output
            assert time.monotonic() < deadline, self.output
            time.sleep(0.2)

    def children(self) -> list[psutil.Process]:
        return psutil.Process(self.process.pid).children()

    def finish(self, timeout: float = 60) -> int:
        status = self.process.wait(timeout=timeout)
        self._reader.join(timeout=10)
        return status

    def group_is_empty(self) -> bool:
        try:
            os.killpg(self.process.pid, 0)
        except ProcessLookupError:
            return True
        return False

    def kill(self) -> None:
        if not self.group_is_empty():
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


@pytest.fixture
def runquire_env(db, tmp_path):
    """The environment of a runquire on the test database, with two workers."""
    env = live.server_environment(tmp_path / "media", live.new_conformance_key())
    env["INGEST_WORKERS"] = "2"
    return env


@pytest.fixture
def launch(runquire_env):
    launches: list[Launch] = []

    def start() -> Launch:
        launches.append(Launch(runquire_env))
        launches[-1].wait_until_ready()
        return launches[-1]

    yield start
    for launched in launches:
        launched.kill()


@pytest.mark.slow
def test_ctrl_c_to_the_process_group_stops_everything_with_status_0(launch):
    """SIGINT to the group (the server, both workers and runquire) ends runquire
    with status 0 after every child has stopped, and prints no error."""
    quire = launch()
    assert len(quire.children()) == 3  # uvicorn and two ingest workers
    os.killpg(quire.process.pid, signal.SIGINT)
    assert quire.finish() == 0
    assert quire.output.rstrip().endswith("Quire stopped.")
    assert not ERROR_TEXT.search(quire.output), quire.output
    assert quire.group_is_empty()


@pytest.mark.slow
def test_sigterm_to_runquire_alone_stops_its_children_too(launch):
    """A SIGTERM sent to runquire only (a service manager's stop) is passed on:
    the children stop and runquire exits with status 0."""
    quire = launch()
    children = quire.children()
    quire.process.send_signal(signal.SIGTERM)
    assert quire.finish() == 0
    assert not ERROR_TEXT.search(quire.output), quire.output
    assert not any(child.is_running() for child in children)


@pytest.mark.slow
def test_a_child_dying_on_its_own_is_reported_with_its_status(launch):
    """When the web server dies by itself, runquire stops the workers and fails
    with the real status of the process that died."""
    quire = launch()
    web = next(c for c in quire.children() if "uvicorn" in " ".join(c.cmdline()))
    web.kill()
    assert quire.finish() == 1
    assert "The web process exited with status -9; Quire stopped." in quire.output
    assert quire.group_is_empty()


def run_on_a_terminal(command: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Run `command` as the session leader of a new pseudo-terminal, type Ctrl-C
    once runquire is ready, and return the exit status and what the terminal
    showed."""
    terminal, tty = os.openpty()
    process = subprocess.Popen(
        [sys.executable, "-c", ON_TERMINAL, *command],
        cwd=REPO,
        env=env,
        stdin=tty,
        stdout=tty,
        stderr=tty,
        start_new_session=True,
    )
    os.close(tty)
    shown, typed = b"", False
    deadline = time.monotonic() + STARTUP_SECONDS + 60
    try:
        while time.monotonic() < deadline:
            readable, _, _ = select.select([terminal], [], [], 0.5)
            if readable:
                try:
                    data = os.read(terminal, 65536)
                except OSError:  # EIO: every process on the terminal is gone
                    break
                if not data:
                    break
                shown += data
            if not typed and ready(shown.decode(errors="replace")):
                os.write(terminal, b"\x03")
                typed = True
        status = process.wait(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        os.close(terminal)
    assert typed, shown.decode(errors="replace")
    return status, shown.decode(errors="replace")


@pytest.mark.slow
def test_ctrl_c_on_a_terminal_ends_make_with_status_0(runquire_env, tmp_path):
    """`make` running runquire on a terminal: Ctrl-C stops Quire's processes
    and make exits with status 0, without make's "Interrupt" or an error."""
    port = live.free_port()
    makefile = tmp_path / "Makefile"
    makefile.write_text(
        f"run:\n\t{sys.executable} manage.py runquire --port {port}\n",
        encoding="utf-8",
    )
    status, shown = run_on_a_terminal(
        ["make", "--no-print-directory", "-f", str(makefile), "run"], runquire_env
    )
    assert status == 0, shown
    assert "Quire stopped." in shown
    assert not ERROR_TEXT.search(shown), shown
