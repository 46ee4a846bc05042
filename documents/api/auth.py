"""API keys for the REST API: the same keys, checks and rate limit as MCP."""

from django.http import Http404, HttpRequest
from ninja.security import APIKeyHeader, HttpBearer

from documents.models import Channel, Document
from mcp_endpoint.admission import admit


class RateLimited(Exception):
    """The key used up its requests for this minute (shared with MCP calls)."""

    def __init__(self, retry_after: int):
        super().__init__(f"Rate limit reached; retry in {retry_after} s.")
        self.retry_after = retry_after


# Authentication: both schemes hand the raw key on; every view then checks it
# against the channel it names with mcp_endpoint.admission.admit.


class BearerKey(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> str | None:
        return token.strip() or None


class ApiKeyHeader(APIKeyHeader):
    param_name = "api-key"

    def authenticate(self, request: HttpRequest, key: str | None) -> str | None:
        return (key or "").strip() or None


def open_channel(request: HttpRequest, slug: str) -> Channel:
    """The channel `slug`, if the request's key opens it (else 401/403/404) and
    has requests left this minute (else 429). As on the MCP endpoint, only a
    valid key learns that a channel does not exist."""
    admission = admit(slug, request.auth)
    request.api_key = admission.api_key
    if admission.channel is None:
        raise Http404(f"There is no channel {slug!r}.")
    if admission.retry_after is not None:
        raise RateLimited(admission.retry_after)
    return admission.channel


def channel_document(channel: Channel, document_id: int) -> Document:
    document = Document.objects.for_channel(channel).filter(pk=document_id).first()
    if document is None:
        raise Http404(f"Channel {channel.slug!r} has no document {document_id}.")
    return document
