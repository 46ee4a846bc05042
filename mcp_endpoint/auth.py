"""Who may call the endpoint: credentials, allowed origins, and each channel as
an OAuth protected resource (RFC 9728) with its metadata and challenges."""

from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.urls import reverse
from django.views.decorators.http import require_GET

from documents.access import AccessDenied, Scope
from documents.models import MCP_PATH_PREFIX

PRM_PREFIX = "/.well-known/oauth-protected-resource"


def resource_url(request: HttpRequest, channel_slug: str) -> str:
    """The channel's canonical URI (RFC 8707): the resource its tokens are for."""
    return request.build_absolute_uri(MCP_PATH_PREFIX + channel_slug)


def resource_metadata_url(request: HttpRequest, channel_slug: str | None) -> str:
    """Where the channel's protected-resource metadata is (RFC 9728 path form);
    the site's own document when no channel is named."""
    suffix = MCP_PATH_PREFIX + channel_slug if channel_slug else ""
    return request.build_absolute_uri(PRM_PREFIX + suffix)


def _quoted(value: str) -> str:
    return (
        value.replace("\\", "").replace('"', "'").replace("\r", " ").replace("\n", " ")
    )


def bearer_challenge(
    request: HttpRequest, channel_slug: str | None, exc: AccessDenied | None = None
) -> str:
    """A `WWW-Authenticate: Bearer` value: where the resource metadata is, the
    scope needed, and (when a credential was refused) why."""
    scope = exc.missing_scope if exc is not None and exc.missing_scope else Scope.READ
    parts = [
        f'resource_metadata="{resource_metadata_url(request, channel_slug)}"',
        f'scope="{Scope(scope).value}"',
    ]
    if exc is not None and exc.error:
        parts.append(f'error="{exc.error}"')
        parts.append(f'error_description="{_quoted(str(exc))}"')
    return "Bearer " + ", ".join(parts)


def _metadata(request: HttpRequest, resource: str, name: str) -> JsonResponse:
    data = {
        "resource": resource,
        "authorization_servers": [request.build_absolute_uri("/").rstrip("/")],
        "scopes_supported": list(Scope.values),
        "bearer_methods_supported": ["header"],
        "resource_name": name,
        "resource_documentation": request.build_absolute_uri(reverse("signin:about")),
    }
    response = JsonResponse(data)
    response["Access-Control-Allow-Origin"] = "*"
    response["Cache-Control"] = "public, max-age=3600"
    return response


@require_GET
def channel_resource_metadata(request: HttpRequest, channel_slug: str) -> JsonResponse:
    """RFC 9728 metadata of /mcp/<slug>: its resource URI, Quire as the
    authorization server, the scopes. Served for any slug, so it tells nothing
    about which channels exist."""
    return _metadata(request, resource_url(request, channel_slug), "Quire channel")


@require_GET
def site_resource_metadata(request: HttpRequest) -> JsonResponse:
    """The path-less document (RFC 9728 root form) for clients that look there:
    the same authorization server; tokens are issued per channel."""
    return _metadata(
        request, request.build_absolute_uri("/").rstrip("/"), "Quire channels"
    )


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
