"""uvicorn's HTTP protocol with deadlines for slow clients and a cap on connections.

uvicorn waits as long as a client likes for request headers and bodies, and
accepts every connection: a few hundred sockets that send one byte now and then
hold their slots for ever. This protocol (`uvicorn --http
project.http_guard:GuardedHttpToolsProtocol`, as `runquire` starts it):

- closes a connection whose request headers take longer than HTTP_HEADER_TIMEOUT;
- closes one whose body takes longer than HTTP_BODY_TIMEOUT plus a second per
  HTTP_BODY_MIN_RATE bytes it declared;
- refuses connections past HTTP_MAX_CONNECTIONS per worker process, or past
  HTTP_MAX_CONNECTIONS_PER_CLIENT from one address, by closing them at once;
- never lets uvicorn's proxy-header middleware rewrite the client address or
  the scheme, even when uvicorn was started without `--no-proxy-headers`: by
  default it believes `X-Forwarded-For`/`-Proto` from any client at 127.0.0.1,
  so a local client could pick its own address for every throttle and the
  audit trail. The address is the socket's, and PROXY_TRUSTED_HOPS alone says
  which forwarded entry to believe instead (documents.access.client_address);
- sends a response of known length whose headers and body fit in one write
  as one write: uvicorn writes the status line and headers, then the body, two
  sends on the socket (each a system call and, on loopback, the receiver's
  TCP work too) for what is nearly always one small segment.
"""

import asyncio
from collections import Counter

from django.conf import settings
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """HttpToolsProtocol plus the deadlines and caps described above."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if isinstance(self.app, ProxyHeadersMiddleware):
            self.app = self.app.app
        self._deadline: asyncio.TimerHandle | None = None
        self._counted = False

    # Connections

    def _clients(self) -> Counter:
        clients = getattr(self.server_state, "quire_clients", None)
        if clients is None:
            clients = self.server_state.quire_clients = Counter()
        return clients

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        host = self.client[0] if self.client else ""
        clients = self._clients()
        if (
            len(self.connections) > settings.HTTP_MAX_CONNECTIONS
            or clients[host] >= settings.HTTP_MAX_CONNECTIONS_PER_CLIENT
        ):
            transport.close()
            return
        clients[host] += 1
        self._counted = True
        self._arm(settings.HTTP_HEADER_TIMEOUT)

    def connection_lost(self, exc) -> None:
        self._disarm()
        if self._counted:
            host = self.client[0] if self.client else ""
            clients = self._clients()
            clients[host] -= 1
            if clients[host] <= 0:
                del clients[host]
            self._counted = False
        super().connection_lost(exc)

    # Deadlines

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, self._too_slow)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            self.transport.close()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm(settings.HTTP_HEADER_TIMEOUT)

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is not None and cycle.scope is self.scope:  # not an upgrade
            cycle.transport = _HeadersWithBody(self.transport, cycle)
        length = 0
        for name, value in self.headers:
            if name == b"content-length":
                try:
                    length = max(0, int(value))
                except ValueError:
                    length = 0
        self._arm(settings.HTTP_BODY_TIMEOUT + length / settings.HTTP_BODY_MIN_RATE)

    def on_message_complete(self) -> None:
        self._disarm()
        super().on_message_complete()


class _HeadersWithBody:
    """The transport as one request's response cycle sees it: the status line
    and headers of a response with a Content-Length and a body are held until
    the body's first write and sent with it. Everything else (a chunked body,
    an empty one, a HEAD, a 100 Continue) is written at once, as before, and a
    close sends what is held first (an application that fails after starting
    its response)."""

    __slots__ = ("_cycle", "_held", "_started", "_transport")

    def __init__(self, transport: asyncio.Transport, cycle) -> None:
        self._transport, self._cycle = transport, cycle
        self._held: bytes | None = None
        self._started = False

    def write(self, data: bytes) -> None:
        held, self._held = self._held, None
        if held is not None:
            self._transport.write(held + data)
            return
        cycle = self._cycle
        if not self._started and cycle.response_started:
            # The cycle's first write once its response started: the headers.
            self._started = True
            if (
                cycle.chunked_encoding is False
                and cycle.expected_content_length > 0
                and cycle.scope["method"] != "HEAD"
            ):
                self._held = data
                return
        self._transport.write(data)

    def close(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            self._transport.write(held)
        self._transport.close()

    def __getattr__(self, name: str):
        return getattr(self._transport, name)
