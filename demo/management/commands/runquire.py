"""manage.py runquire: the web server (uvicorn, ASGI) and the ingestion workers.

They run as child processes of this command; Ctrl-C (SIGINT to the process
group, as a terminal sends it) or SIGTERM stops them all, and the command exits
with status 0. With --demo the demo channel is loaded first and the admin
login, the MCP URL and a fresh API key are printed once the server answers.

Started from a terminal by another program (`make run`), the command moves its
processes into a process group of their own and gives that group the terminal,
so Ctrl-C reaches Quire's processes and not the program that started them:
make then ends with the command's status instead of dying of the signal and
printing an error. The terminal goes back to make's group on the way out.
"""

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from demo.loader import describe, load_demo
from demo.web import uvicorn_command

STARTUP_TIMEOUT = 120.0
STOP_TIMEOUT = 10.0
# After Ctrl-C the children got the signal too: how long they have to finish
# before they are sent one themselves.
GRACE_AFTER_SIGINT = 5.0


class Stop(Exception):
    """SIGINT or SIGTERM arrived: stop the children and exit with status 0."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_stop(signum, frame):
    raise Stop(signum)


def _ignore(signals) -> None:
    for signum in signals:
        signal.signal(signum, signal.SIG_IGN)


@contextmanager
def own_terminal() -> Iterator[None]:
    """Give this process's new process group the controlling terminal, when it
    has one and another program's group holds it; give it back on exit."""
    try:
        tty = os.open("/dev/tty", os.O_RDWR)
    except OSError:  # no controlling terminal
        yield
        return
    try:
        previous = os.getpgrp()
        if os.tcgetpgrp(tty) != previous or previous == os.getpid():
            # In the background, or already leading the terminal's group (a
            # shell started us directly): Ctrl-C already reaches only us.
            yield
            return
        # From a background group, tcsetpgrp would stop us with SIGTTOU; a
        # stopped group holding the terminal (Ctrl-Z) would leave make waiting
        # on a terminal nobody can type into.
        signal.signal(signal.SIGTTOU, signal.SIG_IGN)
        signal.signal(signal.SIGTSTP, signal.SIG_IGN)
        os.setpgid(0, 0)
        os.tcsetpgrp(tty, os.getpgrp())
        try:
            yield
        finally:
            try:
                os.tcsetpgrp(tty, previous)
            except OSError:
                pass  # make's group is gone already
    finally:
        os.close(tty)


class Command(BaseCommand):
    help = (
        "Serve Quire with uvicorn and run the ingestion worker (manage.py "
        "ingest_worker) beside it, until Ctrl-C."
    )

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument(
            "--demo",
            action="store_true",
            help="Load the demo channel first and print its login, URL and key.",
        )
        parser.add_argument(
            "--no-worker",
            dest="worker",
            action="store_false",
            help="Serve only; run `manage.py ingest_worker` elsewhere (by "
            "default INGEST_WORKERS workers run beside the server).",
        )

    def handle(self, *args, host, port, demo, worker, **options):
        self._check_port(host, port)
        with own_terminal():
            self._serve(host, port, demo, worker)

    def _serve(self, host: str, port: int, demo: bool, worker: bool) -> None:
        # Handlers of our own, whatever this process inherited (a background
        # job of a script starts with SIGINT ignored; its children would not).
        previous = {
            signum: signal.signal(signum, _raise_stop)
            for signum in (signal.SIGINT, signal.SIGTERM)
        }
        children: dict[str, subprocess.Popen] = {}
        try:
            base_url = f"http://{host}:{port}"
            site = load_demo(log=self.stdout.write) if demo else None
            connections.close_all()
            for name, command in self._commands(host, port, worker).items():
                children[name] = subprocess.Popen(command, cwd=settings.BASE_DIR)
            self._wait_until_serving(f"{base_url}/admin/login/", children)
            lines = describe(site, base_url) if site else [f"Admin: {base_url}/admin/"]
            self.stdout.write("")
            for line in ["Quire is running.", *lines, "Press Ctrl-C to stop."]:
                self.stdout.write(line)
            self.stdout.flush()
            name, status = self._wait_for_exit(children)
        except Stop as stop:
            _ignore(previous)  # a second Ctrl-C must not cut the stop short
            # Ctrl-C reached the children too: they get time to finish first.
            # A SIGTERM was meant for this process alone.
            grace = GRACE_AFTER_SIGINT if stop.signum == signal.SIGINT else 0.0
            self._stop(children, grace=grace)
            self.stdout.write("Quire stopped.")
            return
        finally:
            _ignore(previous)
            self._stop(children, grace=0.0)
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        raise CommandError(
            f"The {name} process exited with status {status}; Quire stopped."
        )

    @staticmethod
    def _commands(host: str, port: int, worker: bool) -> dict[str, list[str]]:
        commands = {"web": uvicorn_command(host=host, port=port)}
        # Several workers, so one slow document doesn't hold up the others.
        for number in range(1, (settings.INGEST_WORKERS if worker else 0) + 1):
            commands[f"worker {number}"] = [
                sys.executable,
                str(settings.BASE_DIR / "manage.py"),
                "ingest_worker",
                "--no-reload",
                "--no-startup-delay",
            ]
        return commands

    def _check_port(self, host: str, port: int) -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((host, port))
            except OSError as exc:
                raise CommandError(
                    f"Cannot listen on {host}:{port} ({exc.strerror}). Choose "
                    "another port: make run PORT=8001"
                ) from None

    def _wait_until_serving(self, url: str, children: dict) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline:
            for name, child in children.items():
                if child.poll() is not None:
                    raise CommandError(
                        f"The {name} process exited with status {child.returncode}."
                    )
            try:
                with urllib.request.urlopen(url, timeout=2):
                    return
            except (urllib.error.URLError, OSError):
                time.sleep(0.3)
        raise CommandError(f"The server did not answer at {url} in time.")

    @staticmethod
    def _wait_for_exit(children: dict) -> tuple[str, int]:
        """The first child to exit on its own, and its status."""
        while True:
            for name, child in children.items():
                if child.poll() is not None:
                    return name, child.returncode
            time.sleep(0.5)

    def _stop(self, children: dict, *, grace: float) -> None:
        """Stop the children, escalating from SIGINT to SIGKILL.

        SIGINT first: uvicorn re-raises the signal it stopped on, and only after
        SIGINT does Python run the exit hooks that let the embedded PostgreSQL
        know this process is gone (so the last process to leave can stop it).
        """
        running = [child for child in children.values() if child.poll() is None]
        running = self._wait(running, grace)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
            if not running:
                return
            for child in running:
                child.send_signal(sig)
            running = self._wait(running, STOP_TIMEOUT)

    @staticmethod
    def _wait(children: list, timeout: float) -> list:
        deadline = time.monotonic() + timeout
        for child in children:
            try:
                child.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        return [child for child in children if child.poll() is None]
