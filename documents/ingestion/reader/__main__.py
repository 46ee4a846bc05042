"""python -m documents.ingestion.reader '<request JSON>' (see protocol.Request)
reads one file; python -m documents.ingestion.reader --serve <memory MB> reads
one file per request line on stdin, one after another (see serve)."""

import contextlib
import gc
import json
import math
import os
import resource
import signal
import sys
from importlib import import_module

from documents.ingestion.reader.protocol import Refusal, Request, emit

READER_NICENESS = 5
PACKAGE = "documents.ingestion.reader"
# Imported by a serving child before its first request, while it waits, so
# that the file it is then given starts at once: the readers and the parsers
# they import when they run (the one-shot child imports only what it needs).
PRELOADED = (
    *(f"{PACKAGE}.{name}" for name in ("pdf", "office", "epub", "web", "text")),
    "pypdfium2",
    "mammoth",
    "pptx",
    "openpyxl",
    "trafilatura",
)


def _limit_memory(megabytes: int) -> None:
    if megabytes > 0:
        limit = megabytes * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _start(memory_mb: int) -> None:
    # Ctrl-C reaches the whole process group; the worker decides whether to
    # stop, and a reader killed by it would report a healthy file as corrupt.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _limit_memory(memory_mb)
    # The embedder in the parent is the limit of ingestion: the reader takes
    # the cores it leaves idle instead of competing with it.
    os.nice(READER_NICENESS)


def read(request: Request) -> None:
    """Run the reader the format table names (documents.ingestion.formats); the
    parent chose it, so the child keeps no list of formats of its own."""
    module, _, function = request.reader.rpartition(".")
    reader = getattr(import_module(f"{PACKAGE}.{module}"), function)
    reader(request)


def read_one(request: Request) -> None:
    """Read the file; a Refusal becomes the error message. Anything else
    escapes, and the child exits: the parent reports a crash for this file
    only, and a serving child is replaced rather than trusted again."""
    # The parent kills this process group at the time limit; should the parent
    # die first, the alarm (default action: terminate) ends the child anyway.
    signal.alarm(math.ceil(request.hard_timeout) + 5)
    try:
        read(request)
    except Refusal as refusal:
        emit(
            {
                "kind": "error",
                "code": refusal.code,
                "reason": refusal.reason,
                **refusal.extra,
            }
        )
    finally:
        signal.alarm(0)


def serve(memory_mb: int) -> None:
    """Read the files the parent sends, one JSON request a line on stdin,
    until stdin closes (the parent retired this child, or died).

    Each request carries a `seq`: the child acknowledges it ("accepted") before
    reading and says "done" after the file's last message, so the parent knows
    that a child which died before "accepted" never saw the file, and that
    nothing left over from one file can be taken for the next's."""
    for module in PRELOADED:
        # A module that can't load here fails the file that needs it, saying so.
        with contextlib.suppress(Exception):
            import_module(module)
    # What is loaded now lives as long as the child: the collection after each
    # file looks only at what the file made, not at every module's objects.
    gc.freeze()
    for line in sys.stdin:
        order = json.loads(line)
        seq = order.pop("seq")
        emit({"kind": "accepted", "seq": seq})
        read_one(Request(**order))
        # Nothing of the file outlives it: its objects are freed before the
        # next one is read.
        gc.collect()
        emit({"kind": "done", "seq": seq})


def main(argv: list[str]) -> int:
    if argv[:1] == ["--serve"]:
        _start(int(argv[1]))
        serve(int(argv[1]))
        return 0
    request = Request(**json.loads(argv[0]))
    _start(request.memory_mb)
    read_one(request)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
