"""Sign-in grants: a person's consent for an OAuth client to use a channel.

A grant is recorded when the token endpoint exchanges the code a consent
issued (signin.issuance), so a sign-in abandoned before the exchange leaves no
grant; revoking one (the admin, or the person) revokes every token issued under
it at once. What an abandoned sign-in does leave, its code and the client it
registered for it, `clear_sign_in_leftovers` deletes.
"""

import datetime
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone
from oauth2_provider.models import (
    Application,
    get_access_token_model,
    get_application_model,
    get_grant_model,
    get_refresh_token_model,
)

from documents.access import Actor, Scope, audit
from documents.access.tokens import canonical_resource
from documents.models import Channel, SignInGrant


def record_sign_in_grant(
    *,
    user,
    application,
    channel: Channel,
    resource: str,
    scopes: list[str],
    address: str | None = None,
) -> SignInGrant:
    """The user's active grant of `channel` to `application`, created or widened
    to `scopes` (a client asking again keeps one grant, not one per sign-in).

    Called only when the code a consent issued is exchanged for a token
    (signin.issuance), so a grant never exists, or grows, without the person
    having approved it, nor for a sign-in the client never finished."""
    scopes = [scope for scope in Scope.values if scope in set(scopes) | {Scope.READ}]
    with transaction.atomic():
        grant = (
            SignInGrant.objects.select_for_update()
            .filter(
                user=user,
                application=application,
                channel=channel,
                revoked_at__isnull=True,
            )
            .first()
        )
        if grant is None:
            grant = SignInGrant.objects.create(
                user=user,
                application=application,
                channel=channel,
                resource=canonical_resource(resource),
                scopes=scopes,
            )
        elif grant.scopes != scopes or grant.resource != canonical_resource(resource):
            grant.scopes = sorted(
                set(grant.scopes) | set(scopes), key=Scope.values.index
            )
            grant.resource = canonical_resource(resource)
            grant.save(update_fields=["scopes", "resource"])
        audit.record(
            audit.Action.GRANT_CREATE,
            actor=Actor(
                via="signin", user=user, client=application.name, address=address
            ),
            channel=channel,
            target=grant,
            detail=f"Scopes: {', '.join(scopes)}",
        )
    return grant


def revoke_sign_in_grant(*, grant: SignInGrant, actor: Actor) -> bool:
    """Revoke the grant and every access and refresh token issued under it;
    False when it was revoked already."""
    with transaction.atomic():
        revoked = SignInGrant.objects.filter(
            pk=grant.pk, revoked_at__isnull=True
        ).update(revoked_at=timezone.now())
        if not revoked:
            return False
        resource = canonical_resource(grant.resource)
        for model in (get_refresh_token_model(), get_access_token_model()):
            tokens = model.objects.filter(
                user_id=grant.user_id, application_id=grant.application_id
            )
            for token in tokens:
                if resource in {canonical_resource(r) for r in token.resource or []}:
                    token.revoke()
        audit.record(
            audit.Action.GRANT_REVOKE,
            actor=actor,
            channel=grant.channel,
            target=grant,
        )
    return True


@dataclass(frozen=True)
class Leftovers:
    """What `clear_sign_in_leftovers` deleted."""

    codes: int
    clients: int


def clear_sign_in_leftovers(*, now: datetime.datetime | None = None) -> Leftovers:
    """Delete authorization codes past their expiry (never exchanged: the
    library deletes a code it exchanges), then clients registered by RFC 7591
    more than OAUTH_REGISTRATION_UNUSED_MINUTES ago that hold no token, code or
    sign-in grant, revoked or not: the registrations abandoned sign-ins made.

    Clients made in the admin or named by a metadata document are never
    deleted; a client that ever signed someone in keeps its grant rows, and so
    stays. The worker runs this with its periodic checks."""
    now = now or timezone.now()
    grant_model = get_grant_model()
    _, deleted = grant_model.objects.filter(expires__lt=now).delete()
    codes = deleted.get(grant_model._meta.label, 0)
    registered_before = now - datetime.timedelta(
        minutes=settings.OAUTH_REGISTRATION_UNUSED_MINUTES
    )
    application_model = get_application_model()
    used_by = [
        get_access_token_model(),
        get_refresh_token_model(),
        grant_model,
        SignInGrant,
    ]
    unused = application_model.objects.filter(
        registration_source=Application.RegistrationSource.DCR,
        created__lt=registered_before,
    )
    for model in used_by:
        unused = unused.exclude(
            Exists(model.objects.filter(application=OuterRef("pk")))
        )
    _, deleted = unused.delete()
    return Leftovers(codes=codes, clients=deleted.get(application_model._meta.label, 0))
