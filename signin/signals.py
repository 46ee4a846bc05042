"""Receivers that put sign-in events in the audit trail: tokens the token
endpoint issued, and wrong passwords at /signin/login/ and /admin/login/."""

from django.contrib.auth.signals import user_login_failed
from django.dispatch import receiver
from oauth2_provider.signals import app_authorized

from documents.access import Actor, audit, client_address
from signin import issuance


@receiver(app_authorized, dispatch_uid="signin.token_issued")
def token_issued(sender, request, token, **kwargs) -> None:
    issuance.token_issued(request, token)


@receiver(user_login_failed, dispatch_uid="signin.login_failed")
def login_failed(sender, credentials, request=None, **kwargs) -> None:
    """A refused sign-in (wrong password, or django-axes' lockout) from either
    login page, with the user name tried and the client address."""
    if request is None:  # authenticate() called outside a request
        return
    door = "admin" if request.path.startswith("/admin/") else "signin"
    audit.record(
        audit.Action.LOGIN_FAILED,
        actor=Actor(via=door, address=client_address(request)),
        outcome=audit.Outcome.REFUSED,
        detail=f"User name: {str(credentials.get('username', ''))[:150]}",
    )
