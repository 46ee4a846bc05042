"""Which addresses the web source may connect to.

The operator allows hosts by name (``SOURCE_WEB_HOSTS``) or, with
``SOURCE_WEB_PUBLIC_ONLY``, any host whose every address is public. The check
runs on the resolved addresses of every request and every redirect hop, and
the fetcher then connects to the address it checked, so DNS cannot rebind the
connection elsewhere. Cloud metadata, link-local, multicast, unspecified and
reserved addresses are refused even for an allowed host.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from documents.sources.base import SourceError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], list[str]]

METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254")
)
# RFC 6052: these embed an IPv4 address in their low 32 bits.
NAT64_PREFIX = ipaddress.ip_network("64:ff9b::/96")


def resolve(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to, for TCP."""
    try:
        infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    except socket.gaierror as exc:
        raise SourceError(f"{host} could not be resolved ({exc.strerror}).") from None
    return list(dict.fromkeys(info[4][0] for info in infos))


def effective(ip: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 form carries (mapped, 6to4, NAT64, Teredo's
    client), which is what a connection reaches and what must be judged."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.teredo is not None:
            return ip.teredo[1]
        embedded = ip.ipv4_mapped or ip.sixtofour
        if embedded is None and ip in NAT64_PREFIX:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None:
            return embedded
    return ip


def never_reason(ip: IPAddress) -> str | None:
    """Why no configuration may reach ``ip``, or None."""
    if ip in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if ip.is_unspecified:
        return "the unspecified address"
    if ip.is_link_local:
        return "a link-local address"
    if ip.is_multicast:
        return "a multicast address"
    if ip.is_reserved and not ip.is_loopback:
        return "a reserved address"
    return None


def private_reason(ip: IPAddress) -> str | None:
    """Why ``ip`` is not a public address, or None when it is."""
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_private:
        return "a private address"
    if not ip.is_global:
        return "not a public address"
    return None


@dataclass(frozen=True)
class AddressPolicy:
    """The hosts (lower-case, optionally ``host:port``) the operator allows,
    and whether public addresses are allowed besides them."""

    allowed_hosts: frozenset[str]
    public_only: bool
    resolver: Resolver = resolve

    def allowed(self, host: str, port: int) -> list[str]:
        """The addresses to connect to for ``host``, or SourceError saying
        why the host may not be fetched."""
        host = host.lower().rstrip(".")
        named = host in self.allowed_hosts or f"{host}:{port}" in self.allowed_hosts
        if not named and not self.public_only:
            raise SourceError(
                f"{host} is not a host the operator allows in SOURCE_WEB_HOSTS."
            )
        addresses = self.resolver(host, port)
        if not addresses:
            raise SourceError(f"{host} resolves to no address.")
        for address in addresses:
            self.check_address(host, address, named=named)
        return addresses

    def check_address(self, host: str, address: str, *, named: bool) -> None:
        try:
            ip = effective(ipaddress.ip_address(address.split("%", 1)[0]))
        except ValueError:
            raise SourceError(f"{host} resolves to {address!r}, not an IP.") from None
        reason = never_reason(ip)
        if reason is None and not named:
            reason = private_reason(ip)
            if reason is not None:
                reason += (
                    "; SOURCE_WEB_PUBLIC_ONLY allows public addresses only and "
                    f"{host} is not in SOURCE_WEB_HOSTS"
                )
        if reason is not None:
            shown = f"{host} resolves to {address},"
            if host == address:
                shown = f"{host} is"
            raise SourceError(f"{shown} {reason}: the request was refused.")


def policy_from(
    hosts: Iterable[str], *, public_only: bool, resolver: Resolver = resolve
) -> AddressPolicy:
    return AddressPolicy(
        frozenset(h.lower().rstrip(".") for h in hosts), public_only, resolver
    )
