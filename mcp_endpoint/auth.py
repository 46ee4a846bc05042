"""Who may call the endpoint: API keys, allowed origins."""

from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest


def api_key_from(request: HttpRequest) -> str | None:
    """The key from `Authorization: Bearer <key>` or `api-key: <key>`."""
    authorization = request.headers.get("Authorization", "")
    scheme, _, credentials = authorization.partition(" ")
    if scheme.lower() == "bearer" and credentials.strip():
        return credentials.strip()
    return request.headers.get("api-key", "").strip() or None


def origin_allowed(origin: str) -> bool:
    """True when `origin` is on MCP_ALLOWED_ORIGINS.

    An entry without a port allows every port of that scheme and host (local
    tools such as the Inspector pick their own port); `*` allows any origin.
    """
    parts = urlsplit(origin)
    for allowed in settings.MCP_ALLOWED_ORIGINS:
        if allowed == "*" or allowed.rstrip("/") == origin:
            return True
        entry = urlsplit(allowed)
        if (
            entry.port is None
            and entry.scheme == parts.scheme
            and entry.hostname is not None
            and entry.hostname == parts.hostname
        ):
            return True
    return False
