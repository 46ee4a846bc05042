"""What Quire accepts from an OAuth client, whichever way it arrived.

A client can be registered (RFC 7591), named by a Client ID Metadata Document,
or created in the admin; the library parses each differently, but they all end
as an Application row whose `redirect_uris` is one space-separated string. The
rules here are checked on that parsed form, at registration for a clear error
and again every time the library loads a client (authorize, token), so no
source or later edit can bring in what registration refuses.
"""

from urllib.parse import urlsplit

from oauth2_provider.models import AbstractApplication
from oauth2_provider.oauth2_validators import OAuth2Validator

# The only flows Quire serves: a person signs in in a browser (code + PKCE),
# and the client renews its token. RFC 7591 names.
GRANT_TYPES = ("authorization_code", "refresh_token")
RESPONSE_TYPES = ("code",)
LOOPBACK_HOSTS = {"localhost", "127.0.0.1", "::1", "[::1]"}


def redirect_uri_problem(uri: str) -> str:
    """Why `uri` can't be a redirect URI (https, or http on the loopback
    interface as RFC 8252 allows native clients), or "" when it can."""
    try:
        parts = urlsplit(uri)
        host = parts.hostname or ""
    except ValueError:
        return f"{uri!r} is not a URL."
    if parts.scheme == "https" and host:
        return ""
    if parts.scheme == "http" and host in LOOPBACK_HOSTS:
        return ""
    return (
        f"{uri}: a redirect URI must use https, or http on the loopback interface "
        "(127.0.0.1, localhost)."
    )


def redirect_uris_problem(uris: list[str]) -> str:
    """The first problem with a client's redirect URIs, read the way the library
    stores them (joined by spaces, split on whitespace): an item holding a space
    is two URIs, and each must pass on its own."""
    for item in uris:
        if item != item.strip() or len(item.split()) != 1:
            return f"{item!r}: a redirect URI is one URL, without spaces."
    for uri in " ".join(uris).split():
        problem = redirect_uri_problem(uri)
        if problem:
            return problem
    return ""


def has_nul(value) -> bool:
    """True when a NUL character hides anywhere in `value` (PostgreSQL refuses
    them in text, so the library's lookups would fail with a 500)."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(has_nul(k) or has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(has_nul(item) for item in value)
    return False


def metadata_problem(data: dict) -> tuple[str, str]:
    """The RFC 7591 error and description for client metadata Quire refuses,
    or ("", "") when it's acceptable; the library checks the rest."""
    if has_nul(data):
        return "invalid_client_metadata", "Client metadata can't contain NUL."
    grant_types = data.get("grant_types", ["authorization_code"])
    if isinstance(grant_types, list):
        other = [g for g in grant_types if g not in GRANT_TYPES]
        if other:
            return (
                "invalid_client_metadata",
                f"Unsupported grant_types {other!r}: Quire serves "
                f"{' and '.join(GRANT_TYPES)} only.",
            )
    response_types = data.get("response_types", ["code"])
    if isinstance(response_types, list):
        other = [r for r in response_types if r not in RESPONSE_TYPES]
        if other:
            return (
                "invalid_client_metadata",
                f"Unsupported response_types {other!r}: Quire serves 'code' only.",
            )
    uris = data.get("redirect_uris")
    if isinstance(uris, list) and all(isinstance(uri, str) for uri in uris):
        problem = redirect_uris_problem(uris)
        if problem:
            return "invalid_redirect_uri", problem
    return "", ""


def client_problem(application: AbstractApplication) -> str:
    """Why a stored client may not sign anyone in, or "": the same rules as
    registration, on the parsed row (a metadata document, an admin edit or an
    older registration can't bring in what registration refuses)."""
    if (
        application.authorization_grant_type
        != AbstractApplication.GRANT_AUTHORIZATION_CODE
    ):
        return "Quire serves the authorization code flow only."
    return redirect_uris_problem((application.redirect_uris or "").split())


class QuireValidator(OAuth2Validator):
    """The library's validator, with Quire's client rules applied wherever it
    loads a client (authorization and token endpoints alike)."""

    def _load_application(self, client_id, request):
        client = super()._load_application(client_id, request)
        if client is not None and client_problem(client):
            request.client = None
            return None
        return client
