"""Reader children that read file after file, so that a file does not pay for
starting Python and importing its parsers (a fifth of a second for an Office
file, more than reading a small one).

Every sandbox property of one child per file holds for each file: the time
limit is the file's own (past it the child's whole process group is killed),
the memory limit is set when the child starts, and a file that crashes or hangs
the child fails only its own document. A child is then replaced, never
trusted again; a healthy one is retired after READER_CHILD_MAX_FILES files or
READER_CHILD_MAX_BYTES bytes of files, so that memory a parser keeps can't
accumulate. The child frees each file's objects before the next (see
documents.ingestion.reader.__main__.serve), and the replacement child is
started as soon as one is retired, so that its start overlaps other work.
"""

import atexit
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

from documents.ingestion.parsed import UnreadableFile

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
FINAL = ("end", "error")
# How long a child may take to take a file (to start Python and its parsers,
# or finish freeing the last file) before it is counted as stuck. A file's own
# time limit runs from the moment the child takes it, so that a child slow to
# start on a busy machine never uses up the file's time.
START_SECONDS = 120.0


class ReaderTimedOut(UnreadableFile):
    """The child did not finish within its time limit and was killed."""


class ChildGone(Exception):
    """The child ended before it took the file (it never saw it)."""


class ReaderChild:
    """One child process under a memory limit, reading the files it is given
    one at a time."""

    def __init__(self, memory_mb: int):
        self.memory_mb = memory_mb
        self.files = 0
        self.bytes = 0
        self.broken = False
        self.start_timed_out = False
        self._stderr = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "documents.ingestion.reader",
                "--serve",
                str(memory_mb),
            ],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            # Its own process group, so that a kill takes Tesseract along.
            start_new_session=True,
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return not self.broken and self.process.poll() is None

    def read(
        self,
        request: dict,
        *,
        size: int,
        timeout: float,
        timeout_setting: str,
    ) -> Iterator[dict]:
        """The child's messages about the file `request` names, its final one
        ("end" or "error") last, yielded only once the child said it is done
        with the file. Raises ChildGone when the child ended before taking the
        file (killed past START_SECONDS, or dead), ReaderTimedOut `timeout`
        seconds after it took the file and UnreadableFile when the child
        crashed on the file; the child is broken after any of these."""
        self.files += 1
        self.bytes += size
        seq = self.files
        stderr_start = os.fstat(self._stderr.fileno()).st_size
        timed_out = threading.Event()

        def kill() -> None:
            timed_out.set()
            self.kill()

        def kill_unstarted() -> None:
            self.start_timed_out = True
            self.kill()

        starting = threading.Timer(START_SECONDS, kill_unstarted)
        starting.start()
        watchdog = threading.Timer(timeout, kill)
        accepted = done = False
        final: dict | None = None
        try:
            try:
                assert self.process.stdin is not None
                self.process.stdin.write(
                    (json.dumps({**request, "seq": seq}) + "\n").encode()
                )
                self.process.stdin.flush()
            except OSError:
                self.broken = True
                raise ChildGone from None
            assert self.process.stdout is not None
            for line in self.process.stdout:
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                kind = message.get("kind")
                if kind in ("accepted", "done"):
                    if message.get("seq") != seq:
                        continue
                    if kind == "accepted":
                        accepted = True
                        starting.cancel()
                        watchdog.start()
                        continue
                    done = True
                    break
                if not accepted:
                    continue
                if kind in FINAL:
                    final = message
                elif final is None:
                    yield message
        finally:
            starting.cancel()
            watchdog.cancel()
            if not (done and final is not None):
                self.kill()
        if done and final is not None:
            yield final
            return
        self.process.wait()
        if not accepted:
            raise ChildGone
        if timed_out.is_set():
            raise ReaderTimedOut(
                f"Reading the file took longer than {timeout:g} seconds; it "
                f"may be damaged or too complex (setting {timeout_setting})."
            )
        self.fail(request.get("path", ""), since=stderr_start)

    def fail(self, path: str, *, since: int = 0) -> NoReturn:
        """Raise the UnreadableFile a dead child's output explains."""
        self._stderr.seek(since)
        output = self._stderr.read().decode(errors="replace")
        logger.warning(
            "The reader exited with %s on %s: %s",
            self.process.returncode,
            path,
            output[-2000:],
        )
        if "MemoryError" in output:
            raise UnreadableFile(
                f"Reading the file needed more than {self.memory_mb} MB of "
                "memory; it may be damaged or too complex (setting "
                "PDF_PARSE_MEMORY_MB)."
            )
        raise UnreadableFile("The reader crashed on this file; it is probably corrupt.")

    def kill(self) -> None:
        """End the child and every process it started."""
        self.broken = True
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def close(self) -> None:
        """Retire the child: it exits when its stdin closes; a child that does
        not is killed."""
        if self.process.poll() is None and not self.broken:
            try:
                assert self.process.stdin is not None
                self.process.stdin.close()
                self.process.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        if self.process.poll() is None:
            self.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self._stderr):
            if stream is not None:
                # What a dead child's stdin still buffers goes nowhere.
                with contextlib.suppress(OSError):
                    stream.close()


class Children:
    """The idle child (one per memory limit), lent to one reading at a time (a
    second reading at the same moment gets a child of its own), and retired by
    its lifetime."""

    def __init__(self):
        self._lock = threading.Lock()
        self._idle: dict[int, ReaderChild] = {}
        self._owner = os.getpid()

    def read(
        self,
        request: dict,
        *,
        size: int,
        memory_mb: int,
        timeout: float,
        timeout_setting: str,
        max_files: int,
        max_bytes: int,
    ) -> Iterator[dict]:
        """The messages of one reading (see ReaderChild.read). A child that
        ended before it took the file (while idle) is replaced and the file
        given to the new one; one that dies on it is replaced after it."""
        for attempt in range(2):
            child = self._take(memory_mb)
            final = None
            try:
                for message in child.read(
                    request,
                    size=size,
                    timeout=timeout,
                    timeout_setting=timeout_setting,
                ):
                    if message.get("kind") in FINAL:
                        final = message
                    else:
                        yield message
            except ChildGone:
                if attempt:
                    if child.start_timed_out:
                        raise UnreadableFile(
                            "The reader did not start within "
                            f"{START_SECONDS:g} seconds; the server is "
                            "overloaded. Re-ingest the document later."
                        ) from None
                    child.fail(request.get("path", ""))
                continue
            finally:
                retire = final is None or (
                    child.files >= max_files or child.bytes >= max_bytes
                )
                self._give_back(child, retire=retire)
            yield final
            return

    def prestart(self, memory_mb: int) -> None:
        """Start the idle child with that memory limit now, if there is none,
        so that the first file does not wait for Python and the parsers to
        load (it starts in the background: this does not wait for it)."""
        with self._lock:
            if memory_mb in self._own_idle():
                return
        child = ReaderChild(memory_mb)
        with self._lock:
            if memory_mb not in self._idle:
                self._idle[memory_mb] = child
                return
        child.close()  # another reading gave a child back meanwhile

    def _take(self, memory_mb: int) -> ReaderChild:
        with self._lock:
            child = self._own_idle().pop(memory_mb, None)
        if child is not None and child.alive():
            return child
        if child is not None:
            child.close()
        return ReaderChild(memory_mb)

    def _own_idle(self) -> dict[int, ReaderChild]:
        """The idle children, under the lock. In a forked process they are
        forgotten: their pipes are the parent's."""
        if self._owner != os.getpid():
            self._idle, self._owner = {}, os.getpid()
        return self._idle

    def _give_back(self, child: ReaderChild, *, retire: bool) -> None:
        if retire or not child.alive():
            child.close()
            # The next file finds a child that has started already.
            child = ReaderChild(child.memory_mb)
        with self._lock:
            replaced = self._idle.get(child.memory_mb)
            self._idle[child.memory_mb] = child
        if replaced is not None:
            replaced.close()

    def close(self) -> None:
        """Retire the idle children (at exit, and in tests)."""
        with self._lock:
            children, self._idle = list(self._idle.values()), {}
        for child in children:
            child.close()

    def idle_pid(self, memory_mb: int) -> int | None:
        """The process id of the idle child with that memory limit, or None
        (for tests)."""
        child = self._idle.get(memory_mb)
        return child.pid if child is not None else None


CHILDREN = Children()
atexit.register(CHILDREN.close)
