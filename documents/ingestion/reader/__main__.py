"""python -m documents.ingestion.reader '<request JSON>' (see protocol.Request)."""

import json
import math
import os
import resource
import signal
import sys

from documents.ingestion.reader.protocol import Refusal, Request, emit

READER_NICENESS = 5


def _limit_memory(megabytes: int) -> None:
    if megabytes > 0:
        limit = megabytes * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def read(request: Request) -> None:
    media_type = request.format
    if media_type == "application/pdf":
        from documents.ingestion.reader.pdf import read_pdf

        read_pdf(request)
    elif media_type.startswith("image/"):
        from documents.ingestion.reader.images import read_image_file

        read_image_file(request)
    elif media_type == "text/html":
        from documents.ingestion.reader.web import read_html

        read_html(request)
    elif media_type == "application/epub+zip":
        from documents.ingestion.reader.epub import read_epub

        read_epub(request)
    else:
        from documents.ingestion.reader.office import read_office

        read_office(request)


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
