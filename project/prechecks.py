"""Which requests may send a body, decided from their headers before it is read.

Django's ASGI handler reads the whole body (spooling it to disk) before any
middleware or view runs, so a view's own key check comes after the upload has
cost bandwidth and disk. Default deny: every path is resolved against the URL
configuration first, and its route's `BodyRule` says how large a body may be
(project.body_limit refuses a larger one with 413, from Content-Length or as
it streams) and who may send it (`QuireASGIHandler` asks the rule's check with
a body-less request):

- MCP (/mcp/<slug>): origin, method, key, channel and rate limit
  (mcp_endpoint.views.check_before_body), up to MCP_MAX_BODY_BYTES;
- REST routes that name a channel: the key, channel and scope the route needs
  (documents.api.auth.check_before_body), up to REQUEST_MAX_BYTES; only a valid
  key learns that the channel does not exist (404);
- the admin and the playground: a body over STAFF_BODY_BYTES needs a signed-in
  staff session, up to REQUEST_MAX_BYTES;
- sign-in and OAuth (/signin/, /oauth/): forms and registration JSON, at most
  SMALL_BODY_BYTES;
- every other route, and every path that matches no route: at most
  SMALL_BODY_BYTES (they take no body; a small one still gets the usual 404
  or 405).

A request for a host outside ALLOWED_HOSTS is answered 400 here, as Django
would, before anything builds a URL from its Host header.

A refusal is sent at once with `Connection: close`, so the unread body is never
received; an admission is left in the scope for the view, which then doesn't
check (or count) the request again.
"""

import io
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import aget_user
from django.core.exceptions import SuspiciousOperation
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.exception import response_for_exception
from django.db import InterfaceError, OperationalError, close_old_connections
from django.http import HttpRequest, HttpResponse
from django.urls import (
    Resolver404,
    ResolverMatch,
    URLResolver,
    get_resolver,
    get_urlconf,
)
from django.utils.module_loading import import_string

from documents.access import AccessDenied, Caller
from documents.api import auth as api_auth
from mcp_endpoint import views as mcp_views
from project.api import access_denied_problem, problem
from project.mcp_asgi import handle_mcp
from project.middleware import build_machine_hooks

ADMISSION_KEY = api_auth.ADMISSION_KEY
# Where the route a request's path resolved to is kept, so the body limit and
# the check resolve it once between them.
ROUTE_KEY = "quire.route"
# Admin bodies larger than this (file uploads) need a staff session first;
# sign-in and ordinary form posts are far smaller.
STAFF_BODY_BYTES = 256 * 1024
# The largest body of a route that takes forms or small JSON documents (sign-in,
# OAuth token, registration and consent), or none at all.
SMALL_BODY_BYTES = 64 * 1024

Outcome = HttpResponse | Caller | None
Check = Callable[[HttpRequest, ResolverMatch, int], Awaitable[Outcome]]


@dataclass(frozen=True)
class BodyRule:
    """What a route accepts as a body: at most `limit()` bytes, from a sender
    `check` admits (None: anyone), decided before the body is read."""

    name: str
    limit: Callable[[], int]
    check: Check | None = None
    # A rule for routes that take no body: a route that does take one must
    # name a rule of its own (project/tests/test_body_rules.py walks the URLs).
    takes_body: bool = True


async def _mcp(request: HttpRequest, match: ResolverMatch, length: int) -> Outcome:
    if not settings.MCP_ENABLED:
        return None
    return await mcp_views.check_before_body(request, match.kwargs["channel_slug"])


def _rest_sync(request: HttpRequest) -> Outcome:
    outcome = api_auth.check_before_body(request)
    if isinstance(outcome, AccessDenied):
        return access_denied_problem(outcome, request)
    if isinstance(outcome, Caller) and outcome.channel is None:
        slug, _ = api_auth.required_scope(request.method, request.path)
        return problem(404, f"There is no channel {slug!r}.")
    return outcome


async def _rest(request: HttpRequest, match: ResolverMatch, length: int) -> Outcome:
    return await sync_to_async(_rest_sync)(request)


async def _staff(request: HttpRequest, match: ResolverMatch, length: int) -> Outcome:
    if 0 <= length <= STAFF_BODY_BYTES:
        return None
    engine = import_string(settings.SESSION_ENGINE)
    request.session = engine.SessionStore(
        request.COOKIES.get(settings.SESSION_COOKIE_NAME)
    )
    user = await aget_user(request)
    if user.is_active and user.is_staff:
        return None
    return HttpResponse(
        "Sign in to the admin before uploading.",
        status=403,
        content_type="text/plain; charset=utf-8",
    )


def _small() -> int:
    return SMALL_BODY_BYTES


MCP = BodyRule("mcp", lambda: settings.MCP_MAX_BODY_BYTES, _mcp)
REST = BodyRule("rest", lambda: settings.REQUEST_MAX_BYTES, _rest)
STAFF = BodyRule("staff", lambda: settings.REQUEST_MAX_BYTES, _staff)
SIGN_IN = BodyRule("sign-in", _small)
NO_BODY = BodyRule("no body", _small, takes_body=False)
NO_ROUTE = BodyRule("no route", _small, takes_body=False)

# By the route's outermost URL namespace.
NAMESPACE_RULES = {
    "admin": STAFF,
    "playground": STAFF,
    "signin": SIGN_IN,
    "oauth2_provider": SIGN_IN,
}


def rule_for(match: ResolverMatch | None) -> BodyRule:
    """The body rule of a resolved route (NO_ROUTE when nothing matched)."""
    if match is None:
        return NO_ROUTE
    if match.func is mcp_views.mcp:
        return MCP
    namespace = match.namespaces[0] if match.namespaces else ""
    if namespace == "api":
        # Routes of the REST API that name no channel take no body.
        return REST if "slug" in match.kwargs else NO_BODY
    return NAMESPACE_RULES.get(namespace, NO_BODY)


# The MCP endpoint's routes by path, for the URL resolver they came from (a
# new one after clear_url_caches()): an MCP call resolves its path once per
# channel, not on every call. Bounded, since a client may name any slug.
MCP_ROUTES_MAX = 1024
_mcp_routes: dict[str, ResolverMatch] = {}
_mcp_routes_resolver: list[URLResolver | None] = [None]


def route_match(path_info: str) -> ResolverMatch | None:
    """The route of `path_info` (None: no route), as django.urls.resolve gives it."""
    resolver = get_resolver(get_urlconf())
    if _mcp_routes_resolver[0] is not resolver:
        _mcp_routes.clear()
        _mcp_routes_resolver[0] = resolver
    match = _mcp_routes.get(path_info)
    if match is not None:
        return match
    try:
        match = resolver.resolve(path_info)
    except Resolver404:
        return None
    if match.func is mcp_views.mcp:
        if len(_mcp_routes) >= MCP_ROUTES_MAX:
            _mcp_routes.clear()
        _mcp_routes[path_info] = match
    return match


def scope_path_info(scope: dict) -> str:
    """The path Django resolves for this ASGI scope (its root_path removed)."""
    path, root = scope.get("path", "") or "/", scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root) :] or "/"
    return path


def scope_route(scope: dict) -> ResolverMatch | None:
    """The route an ASGI request's path resolves to (None: no route)."""
    if ROUTE_KEY not in scope:
        scope[ROUTE_KEY] = route_match(scope_path_info(scope))
    return scope[ROUTE_KEY]


def body_rule(scope: dict) -> BodyRule:
    """The body rule of the route an ASGI request's path resolves to."""
    return rule_for(scope_route(scope))


def declared_length(scope: dict) -> int | None:
    """Content-Length, or -1 for a chunked or unreadable one, or None for no body."""
    for name, value in scope.get("headers", []):
        name = name.lower()
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return -1
        if name == b"transfer-encoding":
            return -1
    return None


async def check_before_body(handler: ASGIHandler, scope: dict) -> HttpResponse | None:
    """The refusal to send for a request with a body, else None (an admission,
    if one was made, is left in the scope)."""
    length = declared_length(scope)
    if length is None or length == 0:
        return None
    request, error = handler.create_request(scope, io.BytesIO())
    if request is None:
        return error
    try:
        request.get_host()
    except SuspiciousOperation as exc:  # DisallowedHost: 400, as Django answers
        return response_for_exception(request, exc)
    match = scope_route(scope)
    rule = rule_for(match)
    if rule.check is None:
        return None
    outcome = await rule.check(request, match, length)
    if isinstance(outcome, Caller):
        scope[ADMISSION_KEY] = outcome
        return None
    return outcome


class QuireASGIHandler(ASGIHandler):
    """Django's ASGI handler, with the checks above before the body is read;
    the MCP endpoint's requests take project.mcp_asgi's flat path (unless
    MCP_FLAT_PATH is off)."""

    def __init__(self):
        super().__init__()  # builds the middleware chain from the settings
        # ...and, from the same settings, the same middleware's hooks for MCP.
        self.machine_hooks = build_machine_hooks()

    def resolve_request(self, request: HttpRequest) -> ResolverMatch:
        """The route the checks resolved from the same path, not a second walk
        of the URL patterns."""
        match = getattr(request, "scope", {}).get(ROUTE_KEY)
        if match is None or hasattr(request, "urlconf"):
            return super().resolve_request(request)
        request.resolver_match = match
        return match

    async def handle(self, scope, receive, send):
        match = scope_route(scope)
        if rule_for(match) is MCP and settings.MCP_ENABLED and settings.MCP_FLAT_PATH:
            return await handle_mcp(
                self,
                scope,
                receive,
                send,
                match,
                body_announced=bool(declared_length(scope)),
            )
        # Django drops a broken connection when a request starts
        # (request_started); these checks query before that, so after a
        # PostgreSQL restart they would reuse the dead one forever.
        await sync_to_async(close_old_connections)()
        try:
            refusal = await check_before_body(self, scope)
        except (OperationalError, InterfaceError):
            # An outage: the view answers it (a retryable error in its protocol).
            refusal = None
        if refusal is None:
            return await super().handle(scope, receive, send)
        refusal["Connection"] = "close"
        try:
            await self.send_response(refusal, send)
        finally:
            await sync_to_async(close_old_connections)()
