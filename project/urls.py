from django.conf import settings
from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("documents.urls")),
]
if settings.MCP_ENABLED:
    urlpatterns.append(path("", include("mcp_endpoint.urls")))
