"""manage.py runquire: the web server (uvicorn, ASGI) and the ingestion worker.

Both run as child processes of this command; Ctrl-C (or SIGTERM) stops both.
With --demo the demo channel is loaded first and the admin login, the MCP URL
and a fresh API key are printed once the server answers.
"""

import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from demo.loader import describe, load_demo

STARTUP_TIMEOUT = 120.0
# uvicorn's protocol with deadlines for slow clients and connection caps.
HTTP_PROTOCOL = "project.http_guard:GuardedHttpToolsProtocol"
STOP_TIMEOUT = 10.0


class Stop(Exception):
    """SIGTERM arrived: shut the children down like Ctrl-C does."""


def _raise_stop(signum, frame):
    raise Stop


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
        base_url = f"http://{host}:{port}"
        site = load_demo(log=self.stdout.write) if demo else None
        connections.close_all()

        commands = {
            "web": [
                sys.executable,
                "-m",
                "uvicorn",
                "project.asgi:application",
                "--host",
                host,
                "--port",
                str(port),
                "--lifespan",
                "off",
                "--http",
                HTTP_PROTOCOL,
            ]
        }
        # Several workers, so one slow document doesn't hold up the others.
        for number in range(1, (settings.INGEST_WORKERS if worker else 0) + 1):
            commands[f"worker {number}"] = [
                sys.executable,
                str(settings.BASE_DIR / "manage.py"),
                "ingest_worker",
                "--no-reload",
                "--no-startup-delay",
            ]
        previous = signal.signal(signal.SIGTERM, _raise_stop)
        children: dict[str, subprocess.Popen] = {}
        exit_code = 0
        try:
            for name, command in commands.items():
                children[name] = subprocess.Popen(command, cwd=settings.BASE_DIR)
            self._wait_until_serving(f"{base_url}/admin/login/", children)
            lines = describe(site, base_url) if site else [f"Admin: {base_url}/admin/"]
            self.stdout.write("")
            for line in ["Quire is running.", *lines, "Press Ctrl-C to stop."]:
                self.stdout.write(line)
            self.stdout.flush()
            exit_code = self._wait_for_exit(children)
        except KeyboardInterrupt:
            # The terminal sent SIGINT to the children too: let them finish first.
            self._stop(children, grace=3.0)
        except Stop:
            pass
        finally:
            self._stop(children, grace=0.0)
            signal.signal(signal.SIGTERM, previous)
        if exit_code:
            raise CommandError(f"A Quire process exited with status {exit_code}.")

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

    def _wait_for_exit(self, children: dict) -> int:
        while True:
            for name, child in children.items():
                if child.poll() is not None:
                    self.stderr.write(
                        f"The {name} process exited with status {child.returncode}; "
                        "stopping."
                    )
                    return child.returncode or 1
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
