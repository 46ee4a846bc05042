"""The caller: who is calling, made once per request, and the one rule every
door asks of it.

A caller comes from an API key, a sign-in token (with its grant), a signed-in
staff session, or a trusted process (the command line, the demo loader, the
worker). MCP, the REST API, the admin, the playground, citation and page links
and sign-in all ask it the same questions:

- `may(channel_id, scope)`, `scopes_on(channel_id)`: what it may do on a
  channel *now* (read, write, or nothing), from the credential's current state
  in the database;
- `subject`: what its links are signed for and its limits counted against
  (`key:<id>`, `grant:<id>`, `user:<id>`);
- `actor`: who it is for the audit trail;
- `limited`, `request_refusal`, `write_refusal`: which limits apply, and
  whether this request or write passes them.

The hot path (`admission.admit`, every MCP call and REST request) asks the same
questions of an API key in one SQL statement, then hands on the caller it made;
documents/tests/test_caller.py keeps the statement and `may` in step.
"""

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.db.models import QuerySet
from django.utils import timezone

from documents.access.principals import AccessDenied, Actor, Scope, client_address
from documents.access.staff import CURATE, READ, channels_for
from documents.access.windows import count_request, count_write
from documents.models import ApiKey, Channel, SignInGrant

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser
    from django.http import HttpRequest

# Doors whose callers carry no credential and are trusted with everything: they
# run on the server itself.
TRUSTED_DOORS = frozenset({"command", "demo", "worker"})
# A token's or session's scope needs this role on the channel behind it.
ROLE_FOR_SCOPE = {Scope.READ: READ, Scope.WRITE: CURATE}


@dataclass(frozen=True)
class Caller:
    """Who is calling, through which door, from which address; and, once
    admitted, the channel and the scope it was admitted for."""

    via: str  # admin, rest, mcp, playground, citation, signin, command, demo...
    address: str = ""
    api_key: ApiKey | None = None
    user: "AbstractBaseUser | None" = None
    token: Any = None  # an oauth2_provider AccessToken
    grant: SignInGrant | None = None  # the consent behind `token`
    # Set by admission: the channel it opened (None: none named, or no such
    # channel, told only to a valid credential) and for what.
    channel: Channel | None = None
    scope: str = Scope.READ

    # --- Made once per request --------------------------------------------------

    @classmethod
    def for_session(cls, request: "HttpRequest", *, via: str) -> "Caller":
        """The signed-in person of a staff page (admin, playground, sign-in)."""
        user = getattr(request, "user", None)
        if user is not None and not user.is_authenticated:
            user = None
        return cls(via=via, user=user, address=client_address(request))

    @classmethod
    def from_subject(cls, subject: str, *, via: str, address: str = "") -> "Caller":
        """The caller a link was signed for, loaded as it stands now (an
        unknown subject gives a caller without credentials, who may do nothing)."""
        kind, _, raw_id = subject.partition(":")
        pk = int(raw_id) if raw_id.isdigit() else 0
        caller = cls(via=via, address=address)
        if kind == "key":
            api_key = ApiKey.objects.filter(pk=pk).first()
            return cls(via=via, address=address, api_key=api_key) if api_key else caller
        if kind == "grant":
            grant = SignInGrant.objects.select_related("user").filter(pk=pk).first()
            if grant is not None:
                return cls(via=via, address=address, user=grant.user, grant=grant)
        if kind == "user":
            user = get_user_model().objects.filter(pk=pk).first()
            if user is not None:
                return cls(via=via, address=address, user=user)
        return caller

    # --- Who it is -----------------------------------------------------------

    @property
    def subject(self) -> str:
        """What links are signed for and limits counted against; "" for a
        trusted process."""
        if self.api_key is not None:
            return f"key:{self.api_key.pk}"
        if self.grant is not None:
            return f"grant:{self.grant.pk}"
        if self.user is not None:
            return f"user:{self.user.pk}"
        return ""

    @property
    def limited(self) -> bool:
        """Whether the request and write limits apply: to keys and sign-ins,
        not to staff sessions (the admin's own rules) or trusted processes."""
        return self.api_key is not None or self.grant is not None

    def request_refusal(self) -> AccessDenied | None:
        """The 429 for a request past the per-minute limit (this one counted),
        or None. API keys are counted by the admission statement itself."""
        if not self.limited:
            return None
        over = count_request(self.subject)
        return AccessDenied.over_limit("Rate limit reached", over) if over else None

    def write_refusal(self) -> AccessDenied | None:
        """The 429 for a write past the hourly write quota (this one counted),
        or None."""
        if not self.limited:
            return None
        over = count_write(self.subject)
        if over is None:
            return None
        who = "This API key" if self.api_key is not None else "This sign-in"
        return AccessDenied.over_limit(
            f"{who} has used its {over.limit} writes for this hour", over
        )

    @property
    def log_label(self) -> str:
        """What log lines name the credential by (never the secret itself)."""
        if self.api_key is not None:
            return self.api_key.prefix
        if self.token is not None:
            return f"token:{self.token.pk}"
        return self.subject or "-"

    @property
    def client(self) -> str:
        """The OAuth client acting for the user, by its name."""
        return self.token.application.name if self.token is not None else ""

    @property
    def actor(self) -> Actor:
        """Who the caller is in the audit trail and in documents' "added by"."""
        return Actor(
            via=self.via,
            user=self.user,
            api_key=self.api_key,
            address=self.address or None,
            client=self.client,
        )

    def admitted(self, channel: Channel | None, scope: str) -> "Caller":
        """This caller, admitted to `channel` for `scope`."""
        return replace(self, channel=channel, scope=scope)

    # --- The rule ---------------------------------------------------------------

    def granted_scopes(self) -> frozenset[str]:
        """The scopes the credential itself carries, before the channel is
        asked: a key's; a token's at most its grant's (a token can't hold
        more than the consent it came from); a session's all (its role on
        the channel decides)."""
        if self.api_key is not None:
            return frozenset(self.api_key.scopes)
        if self.grant is not None:
            scopes = frozenset(self.grant.scopes)
            if self.token is not None:
                scopes &= frozenset((self.token.scope or "").split())
            return scopes
        return frozenset(Scope.values)

    def scopes_on(self, channel_id: int) -> frozenset[str]:
        """What the caller may do on the channel now: the granted scopes that
        its credential's current state and its role on the channel allow."""
        return frozenset(scope for scope in Scope.values if self.may(channel_id, scope))

    def may(self, channel_id: int, scope: str = Scope.READ) -> bool:
        """Whether the caller may use the channel with `scope` now."""
        if scope not in self.granted_scopes():
            return False
        if self.api_key is not None:
            return (
                self.api_key.is_active(timezone.now())
                and ApiKey.channels.through.objects.filter(
                    apikey_id=self.api_key.pk, channel_id=channel_id
                ).exists()
            )
        if self.grant is not None:
            if self.grant.revoked_at is not None or self.grant.channel_id != channel_id:
                return False
            if self.token is not None and self.token.is_expired():
                return False
        elif self.user is None:
            return self.via in TRUSTED_DOORS
        role = ROLE_FOR_SCOPE[Scope(scope)]
        return channels_for(self.user, role).filter(pk=channel_id).exists()

    def readable_channels(self) -> QuerySet[Channel]:
        """The channels the caller may read: a key's, a grant's one, a
        person's as reader or curator."""
        if self.api_key is not None:
            return self.api_key.channels.all()
        if self.grant is not None:
            return Channel.objects.filter(pk=self.grant.channel_id)
        if self.user is not None:
            return channels_for(self.user, READ)
        if self.via in TRUSTED_DOORS:
            return Channel.objects.all()
        return Channel.objects.none()
