"""The consent rules of the authorization endpoint.

A code is issued only when the person answers the consent page (its POST,
CSRF-protected): the library's shortcuts that issue one straight from the GET
(`approval_prompt=auto` with an earlier token, an application marked
`skip_authorization`) end on the page instead. The grant is recorded when the
code is exchanged for a token (signin.issuance), so a refused or failed
authorization (a mismatching redirect URI...) and a sign-in the client never
finished record nothing, and a grant is widened only by a consent.
"""

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from django.http import HttpRequest
from oauth2_provider.settings import oauth2_settings

from documents.access import Actor, audit, client_address
from documents.models import Channel


class ConsentFirst(Exception):
    """The library tried to issue a code before the consent page was answered."""


def require_consent(request: HttpRequest) -> None:
    """Raise ConsentFirst unless this is the consent form's answer."""
    if request.method != "POST":
        raise ConsentFirst


def with_issuer(uri: str, request: HttpRequest) -> str:
    """`uri` with RFC 9207's `iss` (this server's issuer) in its query, once:
    on every authorization response, errors included, so a client talking to
    several servers can tell which one answered."""
    issuer = oauth2_settings.oauth2_authorization_server_issuer(request)
    parts = urlsplit(uri)
    query = [
        (key, value)
        for key, value in parse_qsl(parts.query, keep_blank_values=True)
        if key != "iss"
    ]
    query.append(("iss", issuer))
    return urlunsplit(parts._replace(query=urlencode(query)))


def refused(request: HttpRequest, *, application, channel: Channel | None) -> None:
    """The person clicked Cancel on the consent page: audited, nothing granted."""
    audit.record(
        audit.Action.CONSENT_REFUSE,
        actor=Actor(
            via="signin",
            user=request.user,
            client=application.name,
            address=client_address(request),
        ),
        channel=channel,
        target=application,
        outcome=audit.Outcome.REFUSED,
    )
