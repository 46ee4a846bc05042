"""project.forwarded: forwarded headers reach Quire only from the addresses
PROXY_TRUSTED_ADDRESSES declares (every peer when it is empty)."""

import asyncio
import ipaddress

import pytest

from project.forwarded import ForwardedHeadersGuard

HEADERS = [
    (b"host", b"quire.example.org"),
    (b"x-forwarded-for", b"203.0.113.7"),
    (b"x-forwarded-proto", b"https"),
    (b"x-forwarded-host", b"evil.example"),
    (b"forwarded", b"for=203.0.113.7;proto=https"),
    (b"x-real-ip", b"203.0.113.7"),
    (b"authorization", b"Bearer qk_x"),
]


def seen_headers(client, scope_type: str = "http") -> list[tuple[bytes, bytes]]:
    seen = {}

    async def app(scope, receive, send):
        seen["headers"] = scope["headers"]

    scope = {"type": scope_type, "client": client, "headers": list(HEADERS)}
    asyncio.run(ForwardedHeadersGuard(app)(scope, None, None))
    return seen["headers"]


@pytest.fixture
def proxy_at(settings):
    def declare(*networks: str) -> None:
        settings.PROXY_TRUSTED_ADDRESSES = [
            ipaddress.ip_network(n, strict=False) for n in networks
        ]

    return declare


def test_every_peer_is_believed_when_no_proxy_address_is_declared(proxy_at):
    proxy_at()
    assert seen_headers(("198.51.100.1", 5000)) == HEADERS


@pytest.mark.parametrize("peer", [("10.0.0.5", 40000), ("10.0.0.9", 1)])
def test_the_declared_proxies_headers_pass(proxy_at, peer):
    proxy_at("10.0.0.5", "10.0.0.8/30")
    assert seen_headers(peer) == HEADERS


@pytest.mark.parametrize(
    "peer", [("127.0.0.3", 40000), ("::1", 40000), None, ("not-an-ip", 0)]
)
@pytest.mark.parametrize("scope_type", ["http", "websocket"])
def test_any_other_peer_loses_every_forwarded_header(proxy_at, peer, scope_type):
    """Another address, a Unix-socket peer (no address) or an unreadable one:
    the forwarded headers are gone, the others untouched."""
    proxy_at("127.0.0.1")
    assert seen_headers(peer, scope_type) == [
        (b"host", b"quire.example.org"),
        (b"authorization", b"Bearer qk_x"),
    ]
