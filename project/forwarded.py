"""An ASGI guard: forwarded headers count only when the proxy sent them.

PROXY_TRUSTED_HOPS says how many proxies stand in front of Quire, and
DJANGO_BEHIND_TLS_PROXY believes their `X-Forwarded-Proto`; neither can tell
the proxy from a client that reaches Quire's port directly, which would then
pick its own address for every throttle and the audit trail, and the scheme of
every URL Quire prints. When PROXY_TRUSTED_ADDRESSES names the proxies'
addresses, a connection from anywhere else has its forwarded headers removed
before Django, documents.access.client_address or Django's
SECURE_PROXY_SSL_HEADER see them: it is served as the plain connection it is.
Unset, every peer is believed, as before (docs/production.md asks that Quire
be reachable only through the proxy).
"""

import ipaddress

from django.conf import settings

FORWARDED_HEADERS = frozenset(
    {
        b"forwarded",
        b"x-forwarded-for",
        b"x-forwarded-host",
        b"x-forwarded-port",
        b"x-forwarded-prefix",
        b"x-forwarded-proto",
        b"x-real-ip",
    }
)


def from_trusted_proxy(client: tuple[str, int] | list | None) -> bool:
    """Whether the connection's peer may set forwarded headers: any peer when
    PROXY_TRUSTED_ADDRESSES is empty, else only the addresses it declares (a
    Unix-socket peer, which has no address, only then too)."""
    networks = settings.PROXY_TRUSTED_ADDRESSES
    if not networks:
        return True
    if not client:
        return False
    try:
        address = ipaddress.ip_address(client[0])
    except ValueError:
        return False
    return any(address in network for network in networks)


class ForwardedHeadersGuard:
    """Wraps the ASGI application; see the module docstring."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] in ("http", "websocket") and not from_trusted_proxy(
            scope.get("client")
        ):
            headers = [
                (name, value)
                for name, value in scope["headers"]
                if name.lower() not in FORWARDED_HEADERS
            ]
            scope = {**scope, "headers": headers}
        await self.app(scope, receive, send)
