"""The token endpoint's side of sign-in: which grant types it serves, what it
records when it issues a token, and what it does when a used code or refresh
token comes back.
"""

import datetime
import hashlib

from django.conf import settings
from django.db import transaction
from django.http import HttpRequest
from django.utils import timezone
from oauth2_provider.models import get_refresh_token_model

from documents.access import Actor, audit, client_address
from documents.access.tokens import canonical_resource
from documents.models import Channel, SignInGrant
from documents.services.grants import record_sign_in_grant
from signin.models import SpentCode
from signin.oauth import GRANT_TYPES
from signin.targets import channel_slug


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def grant_type_refused(grant_type: str) -> bool:
    """True for every grant type but the code flow and refresh (client
    credentials, password, implicit, device...): answered unsupported_grant_type
    before the library, which knows more of them than Quire serves."""
    return grant_type not in GRANT_TYPES


def _actor(request: HttpRequest, token) -> Actor:
    return Actor(
        via="signin",
        user=token.user,
        client=token.application.name if token.application else "",
        address=client_address(request),
    )


def _record_grant(request: HttpRequest, token) -> None:
    """The sign-in is complete: record (or widen) the grant the consent gave,
    for the channel the code is bound to (its one resource) and the scopes the
    person approved (the code's, and so the token's)."""
    slugs = [channel_slug(request, resource) for resource in token.resource or []]
    channel = Channel.objects.filter(slug__in=[s for s in slugs if s]).first()
    if channel is None:  # deleted since the consent: the token opens nothing
        return
    record_sign_in_grant(
        user=token.user,
        application=token.application,
        channel=channel,
        resource=canonical_resource(token.resource[0]),
        scopes=token.scope.split(),
        address=client_address(request),
    )


def token_issued(request: HttpRequest, token) -> None:
    """Audit a token the endpoint just issued; for a code exchange, record the
    grant (a grant is active from its first token on), and remember the code
    and the token family it began, so a replay can revoke them."""
    grant_type = request.POST.get("grant_type", "")
    with transaction.atomic():
        if grant_type == "authorization_code":
            _record_grant(request, token)
            family = (
                get_refresh_token_model()
                .objects.filter(access_token=token)
                .values_list("token_family", flat=True)
                .first()
            )
            spent, created = SpentCode.objects.get_or_create(
                code_digest=_digest(request.POST.get("code", "")),
                defaults={"token_family": family},
            )
            if not created:  # two exchanges of one code raced and both won
                get_refresh_token_model().revoke_family(spent.token_family)
                get_refresh_token_model().revoke_family(family)
            keep = datetime.timedelta(days=settings.OAUTH_REFRESH_TOKEN_DAYS)
            SpentCode.objects.filter(spent_at__lt=timezone.now() - keep).delete()
        grant = (
            SignInGrant.objects.select_related("channel")
            .filter(
                user=token.user,
                application=token.application,
                resource__in=[canonical_resource(r) for r in token.resource or []],
                revoked_at__isnull=True,
            )
            .first()
        )
        audit.record(
            audit.Action.TOKEN_ISSUE,
            actor=_actor(request, token),
            channel=grant.channel if grant is not None else None,
            target=grant,
            detail=f"{grant_type}; scopes: {token.scope}; "
            f"resource: {' '.join(token.resource or [])}",
        )


def exchange_refused(request: HttpRequest) -> None:
    """After the endpoint refused a code or refresh token: a code exchanged
    before revokes every token it produced (RFC 6749 section 4.1.2; the
    library has revoked a replayed refresh token's family already), and either
    replay is audited."""
    grant_type = request.POST.get("grant_type", "")
    if grant_type == "authorization_code":
        spent = SpentCode.objects.filter(
            code_digest=_digest(request.POST.get("code", ""))
        ).first()
        if spent is None:
            return
        family = (
            get_refresh_token_model()
            .objects.select_related("application", "user")
            .filter(token_family=spent.token_family)
            .first()
        )
        get_refresh_token_model().revoke_family(spent.token_family)
        actor = Actor(
            via="signin",
            user=family.user if family is not None else None,
            client=family.application.name if family and family.application else "",
            address=client_address(request),
        )
        detail = "An authorization code was used twice; its tokens are revoked."
    elif grant_type == "refresh_token":
        reused = (
            get_refresh_token_model()
            .objects.select_related("application", "user")
            .filter(
                token_checksum=_digest(request.POST.get("refresh_token", "")),
                revoked__isnull=False,
            )
            .first()
        )
        if reused is None:
            return
        actor = Actor(
            via="signin",
            user=reused.user,
            client=reused.application.name if reused.application else "",
            address=client_address(request),
        )
        detail = (
            "A rotated or revoked refresh token was presented; its family is revoked."
        )
    else:
        return
    audit.record(
        audit.Action.TOKEN_REUSE,
        actor=actor,
        outcome=audit.Outcome.REFUSED,
        detail=detail,
    )
