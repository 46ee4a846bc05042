"""Django's middleware, cheaper for the machine-facing MCP endpoint.

In an async request Django runs each MiddlewareMixin hook through sync_to_async:
one thread hop per hook, which made up the largest part of a small MCP call.

- InlineHooks: the hooks of security, common, authentication, X-Frame-Options
  and CSP middleware only read settings and headers and set headers or lazy
  attributes (no database, no files), so these subclasses call them inline.
- BrowserOnly: sessions, CSRF, authentication and messages exist for people in
  a browser (admin, playground). MCP clients send no cookies and the MCP view
  uses no session, user, CSRF token or message (it is csrf_exempt and checks
  API keys itself), so requests under MCP_PATH skip them entirely (CSRF's
  process_view included, which Django would otherwise call through a thread).
"""

from collections.abc import Awaitable, Callable

from asgiref.sync import sync_to_async
from axes import middleware as axes
from axes.helpers import get_lockout_response
from django.conf import settings
from django.contrib.auth import middleware as auth
from django.contrib.messages import middleware as messages
from django.contrib.sessions import middleware as sessions
from django.core.handlers.exception import response_for_exception
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware import clickjacking, common, csp, csrf, security
from django.utils.csp import CSP, build_policy
from django.utils.deprecation import MiddlewareMixin
from django.utils.module_loading import import_string
from ninja.compatibility import files as ninja_files
from oauthlib.common import urldecode

from documents.models import MCP_PATH_PREFIX


def _machine_request(request) -> bool:
    return request.path_info.startswith(MCP_PATH_PREFIX)


class InlineHooks:
    """Runs process_request/process_response in the event loop's thread."""

    async def __acall__(self, request):
        response = None
        if hasattr(self, "process_request"):
            response = self.process_request(request)
        response = response or await self.get_response(request)
        if hasattr(self, "process_response"):
            response = self.process_response(request, response)
        return response


class BrowserOnly:
    """Passes MCP requests straight through; the rest as Django does."""

    def __call__(self, request):
        if _machine_request(request):
            return self.get_response(request)
        return super().__call__(request)

    async def __acall__(self, request):
        if _machine_request(request):
            return await self.get_response(request)
        return await super().__acall__(request)


class SecurityMiddleware(InlineHooks, security.SecurityMiddleware):
    pass


class SessionMiddleware(BrowserOnly, sessions.SessionMiddleware):
    pass


class CommonMiddleware(InlineHooks, common.CommonMiddleware):
    pass


class CsrfViewMiddleware(BrowserOnly, csrf.CsrfViewMiddleware):
    """Django collects process_view apart from the middleware chain and, in an
    async request, calls it through a thread hop: MCP requests skip it here."""

    def __init__(self, get_response):
        super().__init__(get_response)
        if self.async_mode:
            checked = sync_to_async(self.process_view, thread_sensitive=True)

            async def process_view(request, callback, callback_args, callback_kwargs):
                if _machine_request(request):
                    return None
                return await checked(request, callback, callback_args, callback_kwargs)

            self.process_view = process_view


class AuthenticationMiddleware(BrowserOnly, InlineHooks, auth.AuthenticationMiddleware):
    pass


class MessageMiddleware(BrowserOnly, messages.MessageMiddleware):
    pass


class XFrameOptionsMiddleware(InlineHooks, clickjacking.XFrameOptionsMiddleware):
    pass


class ContentSecurityPolicyMiddleware(InlineHooks, csp.ContentSecurityPolicyMiddleware):
    """Django's, with a policy that uses no nonce (none was asked for: every
    answer but a page's) built once per configuration instead of per response."""

    def __init__(self, get_response):
        super().__init__(get_response)
        self._policies: dict[int, tuple[dict, str]] = {}

    def process_response(self, request, response):
        nonce = csp.get_nonce(request)
        if nonce:  # evaluated by a template: this response's own policy
            return super().process_response(request, response)
        sentinel = object()
        if (config := getattr(response, "_csp_config", sentinel)) is sentinel:
            config = settings.SECURE_CSP
        if (report_only := getattr(response, "_csp_ro_config", sentinel)) is sentinel:
            report_only = settings.SECURE_CSP_REPORT_ONLY
        # As Django's: an empty configuration adds no header, nor is one the
        # view set overwritten.
        for header, value in (
            (CSP.HEADER_ENFORCE, config),
            (CSP.HEADER_REPORT_ONLY, report_only),
        ):
            if value and header not in response:
                response.headers[str(header)] = self._policy(value)
        return response

    def _policy(self, config: dict) -> str:
        kept = self._policies.get(id(config))
        if kept is None or kept[0] is not config:
            if len(self._policies) >= 8:
                self._policies.clear()
            kept = self._policies[id(config)] = (config, build_policy(config))
        return kept[1]


class AxesMiddleware(BrowserOnly, axes.AxesMiddleware):
    """django-axes' lockout answer for the admin sign-in (its own async path
    passes the wrong arguments to get_lockout_response, so it is redone here)."""

    async def __acall__(self, request):
        response = await self.get_response(request)
        if settings.AXES_ENABLED and getattr(request, "axes_locked_out", None):
            credentials = getattr(request, "axes_credentials", None)
            response = await sync_to_async(get_lockout_response)(
                request, response, credentials
            )
        return response


def axes_client_address(request) -> str:
    """The address django-axes locks out: the same one the API throttles."""
    from documents.access import client_address

    return client_address(request)


# Endpoints a browser-based MCP client calls across origins during sign-in;
# none of them uses cookies, so any origin may read their answers.
PUBLIC_CORS_PREFIXES = (
    "/.well-known/",
    "/oauth/token/",
    "/oauth/register/",
    "/oauth/revoke/",
)
PUBLIC_CORS_SUFFIXES = ("/server-card",)


class PublicCorsMiddleware(InlineHooks):
    """CORS for the discovery documents and the token, registration and
    revocation endpoints: preflights answered here, `Access-Control-Allow-Origin:
    *` on the answers. Everything else stays same-origin."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        from asgiref.sync import iscoroutinefunction, markcoroutinefunction

        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request):
        from asgiref.sync import iscoroutinefunction

        if iscoroutinefunction(self):
            return self.__acall__(request)
        response = self.process_request(request)
        response = response or self.get_response(request)
        return self.process_response(request, response)

    @staticmethod
    def _public(request) -> bool:
        path = request.path_info
        return path.startswith(PUBLIC_CORS_PREFIXES) or path.endswith(
            PUBLIC_CORS_SUFFIXES
        )

    def process_request(self, request):
        if request.method == "OPTIONS" and self._public(request):
            from django.http import HttpResponse

            response = HttpResponse(status=204)
            response["Access-Control-Allow-Methods"] = "GET, POST, OPTIONS"
            response["Access-Control-Allow-Headers"] = (
                "Authorization, Content-Type, MCP-Protocol-Version"
            )
            response["Access-Control-Max-Age"] = "86400"
            return response
        return None

    def process_response(self, request, response):
        if self._public(request):
            response["Access-Control-Allow-Origin"] = "*"
        return response


OAUTH_PREFIX = "/oauth/"


class OAuthParametersMiddleware(InlineHooks, MiddlewareMixin):
    """Refuses, with an OAuth `invalid_request`, parameters of the authorization
    server (/oauth/) that oauthlib can't decode (a query string that isn't
    valid percent-encoding) or that PostgreSQL can't store (a NUL in a query
    parameter, such as the client id looked up in the database): bad input is
    a 400 before django-oauth-toolkit raises on it as a 500."""

    def process_request(self, request):
        if not request.path_info.startswith(OAUTH_PREFIX):
            return None
        query = request.META.get("QUERY_STRING", "")
        try:
            urldecode(query)
        except ValueError:
            return self._invalid("The query string is not valid percent-encoding.")
        if any("\x00" in key + value for key, value in request.GET.items()):
            return self._invalid("A parameter contains a NUL character.")
        return None

    @staticmethod
    def _invalid(description: str) -> JsonResponse:
        return JsonResponse(
            {"error": "invalid_request", "error_description": description},
            status=400,
        )


# Function middleware that leaves a POST alone: ninja's reads the files of the
# methods it names (PUT), never of a POST (checked when the hooks are built).
POST_PASSES = {
    ninja_files.FIX_MIDDLEWARE_PATH: lambda: "POST" not in ninja_files.FIX_METHODS,
}

Hook = Callable | None


class MachineHooks:
    """settings.MIDDLEWARE's effect on a POST under MCP_PATH, without the chain.

    The layers are instances of the same middleware classes the handler
    chains, and their own process_request/process_response run in the chain's
    order, as InlineHooks.__acall__ and Django's convert_exception_to_response
    would run them: a layer's process_request answering stops the walk inward
    and that layer's process_response and the outer ones still run; an
    exception becomes Django's response for it (response_for_exception) at the
    layer that raised, and the outer layers' process_response see that
    response. BrowserOnly layers pass machine requests straight through, so
    they are not among the layers."""

    def __init__(self, layers: list[tuple[Hook, Hook]]):
        self.layers = layers

    async def respond(
        self,
        request: HttpRequest,
        view: Callable[..., Awaitable[HttpResponse]],
        args: tuple,
        kwargs: dict,
    ) -> HttpResponse:
        response = None
        outermost_unanswered = len(self.layers) - 1
        for index, (process_request, _) in enumerate(self.layers):
            if process_request is None:
                continue
            try:
                response = process_request(request)
            except Exception as exc:  # noqa: BLE001 - as Django's inner()
                response = response_for_exception(request, exc)
                outermost_unanswered = index - 1
                break
            if response is not None:
                outermost_unanswered = index
                break
        if response is None:
            try:
                response = await view(request, *args, **kwargs)
                if response is None:
                    raise ValueError(f"The view {view.__qualname__} returned None.")
            except Exception as exc:  # noqa: BLE001 - as Django's inner()
                response = response_for_exception(request, exc)
        for index in range(outermost_unanswered, -1, -1):
            process_response = self.layers[index][1]
            if process_response is None:
                continue
            try:
                response = process_response(request, response)
            except Exception as exc:  # noqa: BLE001 - as Django's inner()
                response = response_for_exception(request, exc)
        return response


async def _not_chained(request):  # the layers' get_response: never called
    raise RuntimeError("MachineHooks calls the hooks, not the chain")


def _layer(path: str) -> tuple[Hook, Hook] | None | bool:
    """The hooks of one MIDDLEWARE entry for a machine POST: (request hook,
    response hook), None when it passes such a request straight through, or
    False when its effect can't be applied without the chain."""
    if path in POST_PASSES:
        return None if POST_PASSES[path]() else False
    factory = import_string(path)
    if not isinstance(factory, type):
        return False
    instance = factory(_not_chained)
    if hasattr(instance, "process_exception") or hasattr(
        instance, "process_template_response"
    ):
        return False
    if isinstance(instance, BrowserOnly):
        # CSRF's process_view answers None for machine requests (above).
        if hasattr(instance, "process_view") and not isinstance(
            instance, CsrfViewMiddleware
        ):
            return False
        return None
    if not isinstance(instance, InlineHooks) or hasattr(instance, "process_view"):
        return False
    return (
        getattr(instance, "process_request", None),
        getattr(instance, "process_response", None),
    )


def build_machine_hooks() -> MachineHooks | None:
    """The hooks of settings.MIDDLEWARE for a machine POST, or None when one
    entry's effect needs the chain (an unknown middleware, a process_view,
    process_exception or template hook) or a database wraps views in
    transactions: the MCP endpoint then walks Django's chain as before. Built
    with the handler's own chain (project.prechecks.QuireASGIHandler), so both
    read the settings at the same moment."""
    if any(db.get("ATOMIC_REQUESTS") for db in settings.DATABASES.values()):
        return None
    layers = []
    for path in settings.MIDDLEWARE:
        layer = _layer(path)
        if layer is False:
            return None
        if layer is not None and layer != (None, None):
            layers.append(layer)
    return MachineHooks(layers)
