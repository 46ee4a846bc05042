"""The web source's only way onto the network: one GET at a time, paced,
bounded in bytes and time, following redirects itself so each hop's address is
checked (``addresses.AddressPolicy``) and connected to as checked."""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import urllib3

from documents.sources.base import EntryTooLarge, SourceError
from documents.sources.web.addresses import AddressPolicy

REDIRECTS = {301, 302, 303, 307, 308}
CHUNK = 64 * 1024


class Unreachable(SourceError):
    """The site did not answer (connection, timeout): the listing is cut
    short rather than the page taken as gone."""


@dataclass(frozen=True)
class Response:
    url: str
    status: int
    headers: Mapping[str, str]
    body: bytes


class Pacer:
    """At least ``delay`` seconds between the starts of two requests, on an
    injectable clock and sleeper so tests control time."""

    def __init__(
        self,
        delay: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.delay = delay
        self.clock = clock
        self.sleep = sleep
        self.last: float | None = None

    def wait(self) -> None:
        if self.last is not None:
            remaining = self.last + self.delay - self.clock()
            if remaining > 0:
                self.sleep(remaining)
        self.last = self.clock()


class Fetcher:
    """GETs under an address policy; every refusal is a SourceError with a
    reason, and a body past ``max_bytes`` is refused from Content-Length or
    cut off after ``max_bytes + 1`` bytes, never read to its end."""

    def __init__(
        self,
        policy: AddressPolicy,
        pacer: Pacer,
        *,
        timeout: float,
        max_redirects: int,
        user_agent: str,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.policy = policy
        self.ssl_context = ssl_context or ssl.create_default_context()
        self.pacer = pacer
        self.timeout = timeout
        self.max_redirects = max_redirects
        self.user_agent = user_agent
        self.requests = 0

    def get(
        self,
        url: str,
        *,
        max_bytes: int,
        headers: Mapping[str, str] | None = None,
        follow: Callable[[str], bool] = lambda url: True,
    ) -> Response:
        """The response after redirects; a redirect ``follow`` refuses is
        returned as it is."""
        start = url
        for _hop in range(self.max_redirects + 1):
            response = self.get_once(url, max_bytes=max_bytes, headers=headers)
            if response.status not in REDIRECTS:
                return response
            location = response.headers.get("location")
            if not location:
                return response
            target = urljoin(url, location.strip())
            if not follow(target):
                return response
            url = target
        raise SourceError(f"{start} redirects more than {self.max_redirects} times.")

    def get_once(
        self,
        url: str,
        *,
        max_bytes: int,
        headers: Mapping[str, str] | None = None,
    ) -> Response:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise SourceError(f"{url} is not an http(s) URL.")
        if parts.username or parts.password:
            raise SourceError(f"{url} carries a user name or password.")
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            raise SourceError(f"{url} has an invalid port.") from None
        addresses = self.policy.allowed(parts.hostname, port)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        request_headers = {
            "Host": parts.netloc,
            "User-Agent": self.user_agent,
            "Accept-Encoding": "identity",
            **(headers or {}),
        }
        self.pacer.wait()
        self.requests += 1
        deadline = self.pacer.clock() + self.timeout
        timeout = urllib3.Timeout(connect=self.timeout, read=self.timeout)
        if parts.scheme == "https":
            pool: urllib3.HTTPConnectionPool = urllib3.HTTPSConnectionPool(
                host=addresses[0],
                port=port,
                timeout=timeout,
                retries=False,
                maxsize=1,
                ssl_context=self.ssl_context,
                server_hostname=parts.hostname,
                assert_hostname=parts.hostname,
            )
        else:
            pool = urllib3.HTTPConnectionPool(
                host=addresses[0], port=port, timeout=timeout, retries=False, maxsize=1
            )
        try:
            raw = pool.urlopen(
                "GET",
                path,
                headers=request_headers,
                redirect=False,
                preload_content=False,
                decode_content=False,
            )
            try:
                return Response(
                    url=url,
                    status=raw.status,
                    headers={k.lower(): v for k, v in raw.headers.items()},
                    body=self.read(raw, url, max_bytes, deadline),
                )
            finally:
                raw.release_conn()
        except urllib3.exceptions.HTTPError as exc:
            raise Unreachable(f"{url} could not be fetched ({exc}).") from None
        finally:
            pool.close()

    def read(
        self,
        raw: urllib3.BaseHTTPResponse,
        url: str,
        max_bytes: int,
        deadline: float,
    ) -> bytes:
        if raw.status in REDIRECTS or raw.status == 304:
            return b""
        length = raw.headers.get("content-length")
        if length and length.isdigit() and int(length) > max_bytes:
            raise EntryTooLarge(
                f"{url} announces {int(length):,} bytes, more than the "
                f"{max_bytes:,} it may have."
            )
        chunks = []
        read = 0
        while True:
            chunk = raw.read(min(CHUNK, max_bytes + 1 - read))
            if not chunk:
                return b"".join(chunks)
            read += len(chunk)
            if read > max_bytes:
                raise EntryTooLarge(
                    f"{url} is larger than the {max_bytes:,} bytes it may have."
                )
            if self.pacer.clock() > deadline:
                raise Unreachable(f"{url} took longer than {self.timeout:g} s.")
            chunks.append(chunk)
