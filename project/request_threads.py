"""Worker threads reused across requests for Django's thread-sensitive sync code.

Django's ASGI handler gives every request a thread-sensitive context of its own,
and asgiref starts a new thread for it on the first sync call (every request
makes some: middleware, the database, signals) and joins it, from yet another new
thread, when the request ends. Starting and joining two threads per request
was the largest single cost of a small MCP call. This wrapper enters the
request's context itself with a single-thread executor borrowed from a pool
(Django's handler then reuses that context), so each request still runs all of
its sync code on one thread of its own, but the threads outlive the requests.
The thread counts the calls it was given, so the MCP fast path
(project.mcp_asgi) knows whether a request's sync code touched the database
after its admission and its connection must go back to the pool.
"""

import threading
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import ThreadSensitiveContext

# Where a request's scope keeps the thread it borrowed.
REQUEST_THREAD_KEY = "quire.request_thread"


class RequestThread(ThreadPoolExecutor):
    """One worker thread, counting the calls submitted to it."""

    def __init__(self) -> None:
        super().__init__(max_workers=1, thread_name_prefix="request")
        self.calls = 0

    def submit(self, fn, /, *args, **kwargs):
        self.calls += 1
        return super().submit(fn, *args, **kwargs)


class ReusedRequestThreads:
    """ASGI middleware: HTTP requests borrow a worker thread instead of starting one.

    At most `keep` idle threads are kept; a request finding none idle gets a new
    one, so concurrency is never capped by the pool.
    """

    def __init__(self, app, *, keep: int = 32):
        self.app = app
        self.keep = keep
        self._idle: list[RequestThread] = []
        self._lock = threading.Lock()

    def _borrow(self) -> RequestThread:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return RequestThread()

    def _give_back(self, executor: RequestThread) -> None:
        with self._lock:
            if len(self._idle) < self.keep:
                self._idle.append(executor)
                return
        executor.shutdown(wait=False)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        executor = self._borrow()
        scope[REQUEST_THREAD_KEY] = executor
        try:
            async with ThreadSensitiveContext(executor=executor):
                await self.app(scope, receive, send)
        finally:
            self._give_back(executor)
