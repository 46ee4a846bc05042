"""The ASGI lifespan (project.lifespan): startup answered, and at shutdown the
MCP admission's pool closed."""

import asyncio

from documents.access import pool as admission_pool
from project.asgi import application


def test_startup_is_answered_and_shutdown_closes_the_admission_pool(monkeypatch):
    closed = []

    async def close():
        closed.append(True)

    monkeypatch.setattr(admission_pool, "close", close)

    async def main():
        messages = asyncio.Queue()
        for kind in ("lifespan.startup", "lifespan.shutdown"):
            messages.put_nowait({"type": kind})
        sent = []

        async def send(message):
            sent.append(message["type"])

        await application({"type": "lifespan"}, messages.get, send)
        return sent

    sent = asyncio.run(main())
    assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert closed == [True]
