"""The sign-in pages: signing in with a Quire account, and the consent page that
names the client, the channel and the scope before any token is issued."""

from dataclasses import replace
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib import admin
from django.contrib.auth.views import LoginView
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.response import TemplateResponse
from django.utils.csp import CSP
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import csrf_exempt
from oauth2_provider.views import AuthorizationView
from oauth2_provider.views.dynamic_client_registration import (
    DynamicClientRegistrationView,
)

from documents.access import client_address
from documents.access.windows import count_registration
from documents.services.grants import record_sign_in_grant
from signin.targets import requested_target

LOOPBACK_HOSTS = {"localhost", "127.0.0.1", "::1", "[::1]"}


class SignInView(LoginView):
    """Sign in with a Quire (Django) account, in the admin's look."""

    template_name = "signin/login.html"
    redirect_authenticated_user = True

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


class ConsentView(AuthorizationView):
    """OAuth's authorization endpoint with Quire's checks: the request names one
    of this server's channels (RFC 8707 resource), the signed-in person may grant
    the scopes asked for, and the page says who asks, for what, and where the
    browser goes afterwards."""

    template_name = "signin/consent.html"

    def _refused(self, target) -> HttpResponse:
        return TemplateResponse(
            self.request,
            "signin/refused.html",
            {
                **_admin_context(self.request),
                "title": "Access not granted",
                "target": target,
            },
            status=403,
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
        return super().get(request, *args, **kwargs)

    def post(self, request, *args, **kwargs):
        self.target = requested_target(
            request,
            (request.POST.get("resource") or "").split(),
            request.POST.get("scope"),
        )
        if self.target.problem:
            return self._refused(self.target)
        return super().post(request, *args, **kwargs)

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

    def form_valid(self, form):
        response = super().form_valid(form)
        if form.cleaned_data.get("allow"):
            record_sign_in_grant(
                user=self.request.user,
                application=self._application(form),
                channel=self.target.channel,
                resource=self.target.resource,
                scopes=self.target.scopes,
            )
        return response

    @staticmethod
    def _application(form):
        from oauth2_provider.models import get_application_model

        return get_application_model().objects.get(
            client_id=form.cleaned_data["client_id"]
        )


@method_decorator(csrf_exempt, name="dispatch")
class RegistrationView(DynamicClientRegistrationView):
    """RFC 7591 registration, open to anyone as MCP clients expect, but at most
    OAUTH_REGISTRATIONS_PER_HOUR per client address, and with redirect URIs that
    are https or on this machine's loopback (RFC 8252)."""

    def post(self, request, *args, **kwargs):
        if count_registration(client_address(request)) is not None:
            return JsonResponse(
                {
                    "error": "invalid_request",
                    "error_description": "Too many registrations from this "
                    "address; try again later.",
                },
                status=429,
            )
        problem = self._redirect_problem(request.body)
        if problem:
            return JsonResponse(
                {"error": "invalid_redirect_uri", "error_description": problem},
                status=400,
            )
        return super().post(request, *args, **kwargs)

    @staticmethod
    def _redirect_problem(body: bytes) -> str:
        import json

        try:
            data = json.loads(body)
        except (ValueError, RecursionError):
            return ""  # the library answers invalid_client_metadata
        uris = data.get("redirect_uris") if isinstance(data, dict) else None
        for uri in uris if isinstance(uris, list) else []:
            if not isinstance(uri, str):
                continue
            parts = urlsplit(uri)
            if parts.scheme == "http" and (parts.hostname or "") not in LOOPBACK_HOSTS:
                return (
                    f"{uri}: a redirect URI must use https, or http on the "
                    "loopback interface (127.0.0.1, localhost)."
                )
        return ""


def about(request: HttpRequest) -> HttpResponse:
    """What signing in to Quire from an MCP client does (the resource
    documentation of every channel's metadata)."""
    return TemplateResponse(
        request,
        "signin/about.html",
        {**_admin_context(request), "title": "Signing in to Quire from an MCP client"},
    )
