"""ASGI lifespan events: Django's handler speaks only HTTP; this answers the
server's startup and, at shutdown, closes what the process opened on its event
loop (the MCP admission's async pool, documents.access.pool) so its connections
end cleanly rather than with the process."""

from documents.access import pool as admission_pool


class Lifespan:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await admission_pool.close()
                await send({"type": "lifespan.shutdown.complete"})
                return
