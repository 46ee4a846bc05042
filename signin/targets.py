"""What a sign-in asks for: which channel (from its RFC 8707 resource), which
scopes, and whether the signed-in person may grant them."""

from dataclasses import dataclass
from urllib.parse import urlsplit

from django.http import HttpRequest

from documents.access import Scope
from documents.access.caller import Caller
from documents.access.tokens import canonical_resource
from documents.models import MCP_PATH_PREFIX, Channel


@dataclass(frozen=True)
class Target:
    """The channel a client asks to use, or why it can't be granted."""

    channel: Channel | None
    resource: str
    scopes: list[str]
    problem: str = ""


def channel_slug(request: HttpRequest, resource: str) -> str | None:
    """The slug of `resource` when it is one of this server's channel URLs."""
    try:
        parts = urlsplit(resource)
    except ValueError:  # an unterminated IPv6 host: not a URL of this server
        return None
    here = urlsplit(request.build_absolute_uri("/"))
    if (parts.scheme.lower(), parts.netloc.lower()) != (
        here.scheme.lower(),
        here.netloc.lower(),
    ):
        return None
    path = parts.path.rstrip("/")
    if not path.startswith(MCP_PATH_PREFIX):
        return None
    slug = path[len(MCP_PATH_PREFIX) :]
    return slug if slug and "/" not in slug else None


def requested_target(
    request: HttpRequest, resources: list[str], scope_text: str | None
) -> Target:
    """The channel and scopes a sign-in asks for, checked against the user.

    The request must name exactly one resource, a channel URL of this server
    (so every token is bound to one channel); the user must be able to read it
    for the read scope and curate it for the write scope. A channel the user
    can't see is refused like one that doesn't exist.
    """
    scopes = (scope_text or "").split() or [Scope.READ]
    if len(resources) != 1:
        return Target(
            None,
            "",
            scopes,
            "The client must ask for exactly one channel (one resource parameter, "
            f"a URL like {request.build_absolute_uri(MCP_PATH_PREFIX)}<channel>).",
        )
    resource = canonical_resource(resources[0])
    unknown = sorted(set(scopes) - set(Scope.values))
    if unknown:
        return Target(
            None,
            resource,
            scopes,
            f"The client asks for scopes Quire doesn't have: {', '.join(unknown)}.",
        )
    slug = channel_slug(request, resource)
    if slug is None:
        return Target(
            None, resource, scopes, f"{resource} is not a channel of this server."
        )
    caller = Caller.for_session(request, via="signin")
    channel = caller.readable_channels().filter(slug=slug).first()
    if channel is None:
        return Target(
            None,
            resource,
            scopes,
            "Your account has no access to this channel; ask its curators to add "
            "you as a reader.",
        )
    held = caller.scopes_on(channel.pk)
    for scope in scopes:
        if scope not in held:
            return Target(
                channel,
                resource,
                scopes,
                f"Your account may not grant '{scope}' access to {channel.name}: "
                "only its curators can. Ask the client for read access only.",
            )
    return Target(channel, resource, scopes)
