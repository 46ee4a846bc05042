"""API keys for the REST API: the same keys, scopes, checks and limits as MCP.

Every route names the scope it needs (`open_channel(request, slug, WRITE)`);
`required_scope` states the same rule from the method and path alone, so the
ASGI handler can refuse a request before its body is read
(`check_before_body`, called by project.asgi). A test keeps the two in step.
"""

import re

from django.http import Http404, HttpRequest
from ninja.security import APIKeyHeader, HttpBearer

from documents import access
from documents.access import AccessDenied, Caller, Scope, credential_from
from documents.limits import MAX_ID, MAX_PAGE
from documents.models import MCP_PATH_PREFIX, Channel, Document

# Where project.asgi leaves the admission it made before reading the body.
ADMISSION_KEY = "quire.admission"
API_PREFIX = "/api/"
# Any segment, as the route's `{slug}` matches it: a name no channel can have
# (`al pha`) is still a channel path, checked like the others.
_CHANNEL_PATH = re.compile(r"^/api/channels/(?P<slug>[^/]+)(?P<rest>/.*)?$")
_WRITE_PATH = re.compile(r"^/documents(/\d+(/reingest|/file)?)?/?$")
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class BearerKey(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> str | None:
        return token.strip() or None


class ApiKeyHeader(APIKeyHeader):
    param_name = "api-key"

    def authenticate(self, request: HttpRequest, key: str | None) -> str | None:
        return (key or "").strip() or None


def required_scope(method: str, path: str) -> tuple[str | None, str]:
    """(channel slug or None, scope) that a REST request needs: writes to a
    channel's documents (upload, delete, re-ingest, a new file) need "write", all else
    "read"."""
    match = _CHANNEL_PATH.match(path)
    if match is None:
        return None, Scope.READ
    rest = match["rest"] or ""
    if method.upper() in WRITE_METHODS and _WRITE_PATH.match(rest):
        return match["slug"], Scope.WRITE
    return match["slug"], Scope.READ


def _stashed(request: HttpRequest, slug: str | None, scope: str) -> Caller | None:
    caller = (getattr(request, "scope", None) or {}).get(ADMISSION_KEY)
    if caller is None or (scope == Scope.WRITE and caller.scope != scope):
        return None
    if slug is not None and (caller.channel is None or caller.channel.slug != slug):
        return None
    return caller


def admit_request(
    request: HttpRequest, slug: str | None, scope: str = Scope.READ
) -> Caller:
    """The request's caller, admitted to `slug` with `scope` (AccessDenied if
    refused); made before the body was read when the ASGI handler did it."""
    caller = _stashed(request, slug, scope)
    if caller is None:
        caller = access.admit(
            slug,
            getattr(request, "auth", None) or credential_from(request),
            scope=scope,
            via="rest",
            address=access.client_address(request),
            # A sign-in token works here for the channel it was issued for.
            resource=request.build_absolute_uri(MCP_PATH_PREFIX + slug)
            if slug
            else None,
        )
    request.caller = caller
    return caller


def open_channel(request: HttpRequest, slug: str, scope: str = Scope.READ) -> Channel:
    """The channel `slug`, if the request's key opens it with `scope` (else
    401/403/429 as AccessDenied). As on the MCP endpoint, only a valid key
    learns that a channel does not exist (404)."""
    caller = admit_request(request, slug, scope)
    if caller.channel is None:
        raise Http404(f"There is no channel {slug!r}.")
    return caller.channel


def check_before_body(request: HttpRequest) -> Caller | AccessDenied | None:
    """For project.asgi: the caller of a REST request with a body, made from
    its headers; the refusal to send instead; None when no check applies."""
    slug, scope = required_scope(request.method, request.path)
    if slug is None:
        return None
    try:
        return admit_request(request, slug, scope)
    except AccessDenied as exc:
        return exc


def channel_document(channel: Channel, document_id: int) -> Document:
    document = None
    if 1 <= document_id <= MAX_ID:
        document = Document.objects.for_channel(channel).filter(pk=document_id).first()
    if document is None:
        raise Http404(f"Channel {channel.slug!r} has no document {document_id}.")
    return document


def page_in_range(number: int) -> bool:
    return 1 <= number <= MAX_PAGE
