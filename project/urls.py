from django.conf import settings
from django.contrib import admin
from django.urls import include, path

from project import health, views
from project.api import api
from signin.urls import oauth_patterns

# The MCP endpoint's routes first: they are the hot path, and a request to it
# is then resolved by its first pattern instead of after twenty others.
urlpatterns = [path("", include("mcp_endpoint.urls"))] if settings.MCP_ENABLED else []
urlpatterns += [
    path("", views.home, name="home"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", health.metrics_view, name="metrics"),
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("playground/", include("playground.urls")),
    path("", include("signin.urls")),
    path("", include((oauth_patterns, "oauth2_provider"))),
]
