"""Sign-in grants: a person's consent for an OAuth client to use a channel.

The consent page (signin.consent) records a grant when someone approves a client;
revoking it (the admin, or the person) revokes every token issued under it at
once.
"""

from django.db import transaction
from django.utils import timezone
from oauth2_provider.models import get_access_token_model, get_refresh_token_model

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

    Called only once a consent has issued a code (signin.consent), so a grant
    never exists, or grows, without the person having approved it."""
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
