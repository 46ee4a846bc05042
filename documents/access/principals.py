"""Scopes, who is acting in the audit trail, and how a refusal is told."""

import ipaddress
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import models

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

    from documents.models import ApiKey


class Scope(models.TextChoices):
    """What a key or token may do. Every grant includes READ."""

    READ = "read", "Read: every MCP tool and resource, REST reads, search, answers"
    WRITE = "write", "Write: upload, delete and re-ingest documents (REST API)"


@dataclass(frozen=True)
class Actor:
    """Who performs a write, for the audit trail and the documents' "added by":
    what a caller (documents.access.caller) is in the record. Trusted
    processes, which have no caller to ask, use one directly (COMMAND_LINE).

    `via` names the door: admin, rest, mcp, playground, command, demo, worker.
    """

    via: str
    user: "AbstractBaseUser | None" = None
    api_key: "ApiKey | None" = None
    address: str | None = None
    # The OAuth client acting for `user` (a sign-in token), by its name.
    client: str = ""
    # The source a sync writes for (via "source"), by its name; `user` is who
    # asked for the sync, if anyone did.
    source: str = ""

    @property
    def label(self) -> str:
        if self.source:
            asked = f" (asked by {self.user.get_username()})" if self.user else ""
            return f"source {self.source}{asked}"
        if self.api_key is not None:
            return f"key {self.api_key.prefix}… ({self.api_key.name})"
        if self.user is not None and self.client:
            return f"user {self.user.get_username()} via {self.client}"
        if self.user is not None:
            return f"user {self.user.get_username()}"
        if self.client:
            return f"client {self.client}"
        return {"command": "command line", "demo": "demo loader"}.get(
            self.via, self.via
        )


COMMAND_LINE = Actor(via="command")


class AccessDenied(Exception):
    """A request refused by the access rules, with the HTTP status to answer.

    401: no, unknown, revoked or expired credentials (`error` "invalid_token");
    403: valid credentials without the channel or the scope (`missing_scope`
    names it, `error` "insufficient_scope"); 429: throttled or over a quota
    (`retry_after` seconds).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int,
        missing_scope: str | None = None,
        retry_after: int | None = None,
        credentials_given: bool = True,
    ):
        super().__init__(message)
        self.status = status
        self.missing_scope = missing_scope
        self.retry_after = retry_after
        self.credentials_given = credentials_given

    @classmethod
    def over_limit(cls, reason: str, window) -> "AccessDenied":
        """429 for a limit passed in `window` (documents.access.windows.Window):
        the reason, then when to retry."""
        seconds = window.retry_after()
        return cls(f"{reason}; retry in {seconds} s.", status=429, retry_after=seconds)

    @property
    def error(self) -> str | None:
        """The RFC 6750 error code for WWW-Authenticate, when one applies (none
        when the request carried no credentials at all, RFC 6750 section 3.1)."""
        if self.status == 401:
            return "invalid_token" if self.credentials_given else None
        if self.missing_scope:
            return "insufficient_scope"
        return None


def credential_from(request) -> str | None:
    """The API key or access token from `Authorization: Bearer <credential>`, or
    an API key from `api-key: <key>`."""
    authorization = request.headers.get("Authorization", "")
    scheme, _, credentials = authorization.partition(" ")
    if scheme.lower() == "bearer" and credentials.strip():
        return credentials.strip()
    return request.headers.get("api-key", "").strip() or None


def client_address(request) -> str:
    """The client's IP address, decided by PROXY_TRUSTED_HOPS alone.

    0: the connection's address (uvicorn runs without its proxy-header
    rewriting, see project.http_guard). N: the Nth entry from the right of
    X-Forwarded-For, the one the outermost of the N trusted proxies appended;
    entries further left were written by the client and are never believed.
    When that entry is missing or not an IP address, the header did not come
    through the declared proxies and the connection's address is kept.
    """
    address = request.META.get("REMOTE_ADDR") or ""
    hops = settings.PROXY_TRUSTED_HOPS
    if hops:
        forwarded = [
            part.strip()
            for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")
            if part.strip()
        ]
        if len(forwarded) >= hops and _is_ip_address(forwarded[-hops]):
            address = forwarded[-hops]
    return address[:64]


def _is_ip_address(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True
