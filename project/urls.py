from django.conf import settings
from django.contrib import admin
from django.urls import include, path

from project.api import api
from signin.urls import oauth_patterns

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("playground/", include("playground.urls")),
    path("", include("signin.urls")),
    path("", include((oauth_patterns, "oauth2_provider"))),
]
if settings.MCP_ENABLED:
    urlpatterns.append(path("", include("mcp_endpoint.urls")))
