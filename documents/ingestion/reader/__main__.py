"""python -m documents.ingestion.reader '<request JSON>' (see protocol.Request)."""

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


def _limit_memory(megabytes: int) -> None:
    if megabytes > 0:
        limit = megabytes * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def read(request: Request) -> None:
    """Run the reader the format table names (documents.ingestion.formats); the
    parent chose it, so the child keeps no list of formats of its own."""
    module, _, function = request.reader.rpartition(".")
    reader = getattr(import_module(f"{PACKAGE}.{module}"), function)
    reader(request)


def main(argv: list[str]) -> int:
    # Ctrl-C reaches the whole process group; the worker decides whether to
    # stop, and a reader killed by it would report a healthy file as corrupt.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    request = Request(**json.loads(argv[0]))
    _limit_memory(request.memory_mb)
    # The embedder in the parent is the limit of ingestion: the reader takes
    # the cores it leaves idle instead of competing with it.
    os.nice(READER_NICENESS)
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
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
