"""The authorization server's URLs.

`oauth_patterns` are mounted under django-oauth-toolkit's own namespace
("oauth2_provider"), which its metadata view reverses to find the endpoints.
"""

from django.contrib.auth.views import LogoutView
from django.urls import path
from oauth2_provider import views as oauth_views

from signin import views

app_name = "signin"

urlpatterns = [
    path("signin/", views.about, name="about"),
    path("signin/login/", views.SignInView.as_view(), name="login"),
    path(
        "signin/logout/", LogoutView.as_view(next_page="/signin/login/"), name="logout"
    ),
]

oauth_patterns = [
    # RFC 8414: the issuer is this site's root.
    path(
        ".well-known/oauth-authorization-server",
        oauth_views.OAuthServerMetadataView.as_view(),
        name="oauth-server-metadata",
    ),
    path("oauth/authorize/", views.ConsentView.as_view(), name="authorize"),
    path("oauth/token/", views.QuireTokenView.as_view(), name="token"),
    path("oauth/revoke/", views.QuireRevokeTokenView.as_view(), name="revoke-token"),
    path("oauth/register/", views.RegistrationView.as_view(), name="dcr-register"),
    path(
        "oauth/register/<str:client_id>/",
        views.ClientManagementView.as_view(),
        name="dcr-register-management",
    ),
]
