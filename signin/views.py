"""The sign-in pages: signing in with a Quire account, and the consent page that
names the client, the channel and the scope before any token is issued."""

import json
from dataclasses import replace
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from django.conf import settings
from django.contrib import admin
from django.contrib.auth.views import LoginView
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.response import TemplateResponse
from django.utils.csp import CSP
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.csrf import csrf_exempt
from oauth2_provider.models import get_access_token_model, get_application_model
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.views import AuthorizationView, RevokeTokenView, TokenView
from oauth2_provider.views.dynamic_client_registration import (
    DynamicClientRegistrationView,
)

from documents.access import Actor, audit, client_address
from documents.access.windows import count_registration
from signin import consent, issuance
from signin.oauth import LOOPBACK_HOSTS, client_problem, has_nul, metadata_problem
from signin.targets import requested_target


class SignInView(LoginView):
    """Sign in with a Quire (Django) account, in the admin's look."""

    template_name = "signin/login.html"
    redirect_authenticated_user = True
    # Without `next` (someone opening the page directly): the home page, which
    # lists the channels the person can use.
    next_page = "home"

    def get_context_data(self, **kwargs):
        return {
            **admin.site.each_context(self.request),
            **super().get_context_data(**kwargs),
            "title": "Sign in to Quire",
            "site_header": "Quire",
        }


def _admin_context(request: HttpRequest) -> dict:
    return {
        **admin.site.each_context(request),
        "site_header": "Quire",
        "is_nav_sidebar_enabled": False,
    }


def _origin(uri: str) -> str:
    """A CSP source for where `uri` points: its origin, or its scheme when it is
    a custom one (app://...)."""
    parts = urlsplit(uri)
    if parts.scheme in ("http", "https"):
        return f"{parts.scheme}://{parts.netloc}"
    return f"{parts.scheme}:"


class RefuseNul:
    """OAuth endpoints answer a parameter holding NUL with invalid_request:
    no client id, code or token contains one, and the database can't look one
    up."""

    def dispatch(self, request, *args, **kwargs):
        for params in (request.GET, request.POST):
            if any(has_nul([key, *values]) for key, values in params.lists()):
                return _oauth_error(
                    "invalid_request", "Parameters can't contain NUL characters."
                )
        return super().dispatch(request, *args, **kwargs)


class ConsentView(RefuseNul, AuthorizationView):
    """OAuth's authorization endpoint with Quire's checks: the request names one
    of this server's channels (RFC 8707 resource), the signed-in person may grant
    the scopes asked for, and the page says who asks, for what, and where the
    browser goes afterwards. Only the page's answer issues a code
    (signin.consent)."""

    template_name = "signin/consent.html"

    def _refused(self, target, status: int = 403) -> HttpResponse:
        return TemplateResponse(
            self.request,
            "signin/refused.html",
            {
                **_admin_context(self.request),
                "title": "Access not granted",
                "target": target,
            },
            status=status,
        )

    def get(self, request, *args, **kwargs):
        self.target = requested_target(
            request, request.GET.getlist("resource"), request.GET.get("scope")
        )
        if not self.target.problem and request.GET.get("code_challenge_method") != (
            "S256"
        ):
            self.target = replace(
                self.target,
                problem="The client must use PKCE with code_challenge_method=S256.",
            )
        if self.target.problem:
            return self._refused(self.target)
        try:
            return super().get(request, *args, **kwargs)
        except consent.ConsentFirst:
            return self.render_to_response(self.get_context_data(**self.oauth2_data))

    def _consent_required(self) -> HttpResponse:
        """OpenID Connect's prompt=none: the consent page may not be shown, and
        Quire never issues a code without it, so the client hears
        `consent_required` at its redirect URI (validated by the library
        before the page is rendered)."""
        data = self.oauth2_data
        application = get_application_model().objects.get(client_id=data["client_id"])
        answer = {"error": "consent_required"}
        if data.get("state"):
            answer["state"] = data["state"]
        return self.redirect(with_query(data["redirect_uri"], answer), application)

    def post(self, request, *args, **kwargs):
        self.target = requested_target(
            request,
            (request.POST.get("resource") or "").split(),
            request.POST.get("scope"),
        )
        if self.target.problem:
            return self._refused(self.target)
        self.application = (
            get_application_model()
            .objects.filter(client_id=request.POST.get("client_id") or "")
            .first()
        )
        if self.application is None or client_problem(self.application):
            unknown = "This sign-in names a client Quire doesn't know; start again "
            return self._refused(
                replace(self.target, problem=unknown + "from the client."),
                status=400,
            )
        return super().post(request, *args, **kwargs)

    def create_authorization_response(self, request, scopes, credentials, allow):
        """Issue the code only as the consent page's answer (signin.consent);
        the grant is recorded when the code is exchanged (signin.issuance)."""
        consent.require_consent(request)
        if not allow:
            consent.refused(
                request, application=self.application, channel=self.target.channel
            )
        return super().create_authorization_response(
            request, scopes, credentials, allow
        )

    def redirect(self, redirect_to, application):
        return super().redirect(
            consent.with_issuer(redirect_to, self.request), application
        )

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        redirect_uri = self.oauth2_data.get("redirect_uri") or ""
        host = urlsplit(redirect_uri).hostname or ""
        context.update(
            _admin_context(self.request),
            title="Allow access to Quire",
            target=self.target,
            redirect_host=host,
            loopback_only=host in LOOPBACK_HOSTS,
            write="write" in self.target.scopes,
        )
        return context

    def render_to_response(self, context, **kwargs):
        if (
            self.request.method == "GET"
            and "none" in (self.request.GET.get("prompt") or "").split()
        ):
            return self._consent_required()
        response = super().render_to_response(context, **kwargs)
        redirect_uri = self.oauth2_data.get("redirect_uri") if self.oauth2_data else ""
        if redirect_uri:
            # The browser follows the answer's redirect to the client after the
            # form posts: CSP's form-action must allow that (validated) origin.
            response._csp_config = {
                **settings.SECURE_CSP,
                "form-action": [CSP.SELF, _origin(redirect_uri)],
            }
        return response


def with_query(uri: str, values: dict[str, str]) -> str:
    parts = urlsplit(uri)
    query = parse_qsl(parts.query, keep_blank_values=True) + list(values.items())
    return urlunsplit(parts._replace(query=urlencode(query)))


def _oauth_error(error: str, description: str, status: int = 400) -> JsonResponse:
    return JsonResponse(
        {"error": error, "error_description": description}, status=status
    )


@method_decorator(csrf_exempt, name="dispatch")
class RegistrationView(DynamicClientRegistrationView):
    """RFC 7591 registration, open to anyone as MCP clients expect, but at most
    OAUTH_REGISTRATIONS_PER_HOUR per client address, for the code flow only, and
    with redirect URIs that are https or on this machine's loopback (RFC 8252).

    Client management (RFC 7592) is off, so the answer carries no registration
    access token: a registered client can't be renamed or redirected elsewhere
    after people have consented to it."""

    def post(self, request, *args, **kwargs):
        if count_registration(client_address(request)) is not None:
            return _oauth_error(
                "invalid_request",
                "Too many registrations from this address; try again later.",
                status=429,
            )
        try:
            data = json.loads(request.body)
        except (ValueError, RecursionError):
            return _oauth_error(
                "invalid_client_metadata", "Request body must be valid JSON"
            )
        if not isinstance(data, dict):
            return _oauth_error(
                "invalid_client_metadata", "Request body must be a JSON object"
            )
        error, description = metadata_problem(data)
        if error:
            return _oauth_error(error, description)
        response = super().post(request, *args, **kwargs)
        if response.status_code != 201:
            return response
        answer = json.loads(response.content)
        answer.pop("registration_access_token", None)
        answer.pop("registration_client_uri", None)
        application = get_application_model().objects.get(client_id=answer["client_id"])
        get_access_token_model().objects.filter(
            application=application, scope=oauth2_settings.DCR_REGISTRATION_SCOPE
        ).delete()
        audit.record(
            audit.Action.CLIENT_REGISTER,
            actor=Actor(
                via="signin", client=application.name, address=client_address(request)
            ),
            target=application,
            detail=f"Redirect URIs: {application.redirect_uris}",
        )
        return JsonResponse(answer, status=201)


@method_decorator(csrf_exempt, name="dispatch")
class ClientManagementView(View):
    """Where RFC 7592 client management would be: turned off (see
    RegistrationView), for every method."""

    def dispatch(self, request, *args, **kwargs):
        return _oauth_error(
            "not_found",
            "Quire does not support client management (RFC 7592); register a new "
            "client instead.",
            status=404,
        )


@method_decorator(csrf_exempt, name="dispatch")
class QuireTokenView(RefuseNul, TokenView):
    """The token endpoint for the grant types Quire serves, recording what it
    issues and revoking what a replayed code produced (signin.issuance)."""

    def post(self, request, *args, **kwargs):
        grant_type = request.POST.get("grant_type", "")
        if issuance.grant_type_refused(grant_type):
            return _oauth_error(
                "unsupported_grant_type",
                "Quire serves the authorization_code and refresh_token grants only.",
            )
        response = super().post(request, *args, **kwargs)
        if response.status_code == 400:
            issuance.exchange_refused(request)
        return response


@method_decorator(csrf_exempt, name="dispatch")
class QuireRevokeTokenView(RefuseNul, RevokeTokenView):
    """RFC 7009 revocation, with the NUL guard of the other endpoints."""


def about(request: HttpRequest) -> HttpResponse:
    """What signing in to Quire from an MCP client does (the resource
    documentation of every channel's metadata)."""
    return TemplateResponse(
        request,
        "signin/about.html",
        {**_admin_context(request), "title": "Signing in to Quire from an MCP client"},
    )
