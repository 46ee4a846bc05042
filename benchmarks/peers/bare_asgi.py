"""The floor for benchmarks/mcp_overhead.py: a bare ASGI app answering fixed bytes.

    BARE_REPLY_FILE=reply.json .venv/bin/python -m uvicorn \
        benchmarks.peers.bare_asgi:app --http httptools --port 8102

It reads the request's body and answers 200 with the bytes of BARE_REPLY_FILE
(the benchmark writes Quire's own `tools/list` reply there), checking nothing:
what uvicorn and httptools cost to carry one small POST and its answer, the
least any Python MCP server can pay per call.
"""

import os
from pathlib import Path

REPLY = Path(os.environ["BARE_REPLY_FILE"]).read_bytes()
HEADERS = [
    (b"content-type", b"application/json"),
    (b"content-length", str(len(REPLY)).encode()),
]


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    more = True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        more = message.get("more_body", False)
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await send({"type": "http.response.body", "body": REPLY})
