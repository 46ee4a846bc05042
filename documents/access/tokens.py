"""OAuth access tokens (issued by Quire's own authorization server, signin/) as
credentials beside API keys: the same scopes, limits and audit trail.

A token is accepted only for the channel it was issued for (its RFC 8707
resource is that channel's MCP URL), with the scopes it was issued with and its
sign-in grant allows, while that grant stands and its user may still use the
channel.
"""

import hashlib

from django.utils import timezone
from oauth2_provider.models import get_access_token_model

from documents.access import audit
from documents.access.caller import Caller
from documents.access.principals import AccessDenied, Scope
from documents.access.windows import (
    Window,
    failures_from,
)
from documents.models import Channel, SignInGrant


def canonical_resource(url: str) -> str:
    """A resource URI compared as RFC 8707 asks: scheme and host in lower case,
    no trailing slash, no query or fragment."""
    url = url.split("#", 1)[0].split("?", 1)[0].rstrip("/")
    scheme, sep, rest = url.partition("://")
    host, slash, path = rest.partition("/")
    return f"{scheme.lower()}{sep}{host.lower()}{slash}{path}"


def _load(raw_token: str):
    checksum = hashlib.sha256(raw_token.encode("utf-8")).hexdigest()
    return (
        get_access_token_model()
        .objects.select_related("application", "user")
        .filter(token_checksum=checksum)
        .first()
    )


def _grant_for(token, channel_slug: str | None) -> SignInGrant | None:
    """The standing grant behind `token`: for the channel named, or with no
    channel named (the REST channel list) the one for the token's resource,
    compared in canonical form."""
    grants = SignInGrant.objects.select_related("channel").filter(
        user=token.user, application=token.application, revoked_at__isnull=True
    )
    if channel_slug:
        return grants.filter(channel__slug=channel_slug).first()
    resources = {canonical_resource(value) for value in token.resource or []}
    return next(
        (grant for grant in grants if canonical_resource(grant.resource) in resources),
        None,
    )


def admit_token(
    channel_slug: str | None,
    raw_token: str,
    *,
    resource: str | None,
    scope: str,
    via: str,
    address: str,
) -> Caller:
    """The caller of an OAuth access token, or AccessDenied: 401
    (`invalid_token`) for an unknown, expired or revoked token or one issued for
    another resource; 403 (`insufficient_scope`) for a token without the
    scope (a token holds at most its grant's scopes); 429 past the grant's
    limits or after failed authentications from the address."""
    failures = Window.failures()
    if failures.exceeded(failures_from(address)):
        raise AccessDenied.over_limit(
            "Too many failed authentications from this address", failures
        )
    token = _load(raw_token)
    channel = (
        Channel.objects.filter(slug=channel_slug).first() if channel_slug else None
    )
    caller = Caller(
        via=via,
        address=address,
        user=token.user if token is not None else None,
        token=token,
    )
    refusal = None
    if token is None or token.is_expired():
        refusal = AccessDenied("The access token is unknown or expired.", status=401)
    elif resource is not None and canonical_resource(resource) not in {
        canonical_resource(value) for value in token.resource or []
    }:
        refusal = AccessDenied(
            "The access token was issued for another server; sign in for this channel.",
            status=401,
        )
    else:
        grant = _grant_for(token, channel_slug)
        if grant is not None:
            caller = Caller(
                via=via, address=address, user=token.user, token=token, grant=grant
            )
        if grant is None or not token.user.is_active:
            refusal = AccessDenied(
                "The sign-in behind this token was revoked.", status=401
            )
        elif scope not in caller.granted_scopes():
            refusal = AccessDenied(
                f"The access token, or the sign-in it came from, does not allow "
                f"'{Scope(scope).value}'; sign in again and approve "
                f"'{Scope(scope).value}'.",
                status=403,
                missing_scope=scope,
            )
        elif not caller.may(grant.channel_id, scope):
            refusal = AccessDenied(
                "The account behind this token no longer has access to this channel.",
                status=403,
            )
    if refusal is not None:
        audit.record_refusal(
            refusal, actor=caller.actor, channel=channel, detail=str(refusal)
        )
        raise refusal
    over_limit = caller.request_refusal() or (
        caller.write_refusal() if scope == Scope.WRITE else None
    )
    if over_limit is not None:
        raise over_limit
    grant = caller.grant
    now = timezone.now()
    if grant.last_used_at is None or (now - grant.last_used_at).total_seconds() > 60:
        SignInGrant.objects.filter(pk=grant.pk).update(last_used_at=now)
    return caller.admitted(grant.channel if channel_slug else None, scope)
