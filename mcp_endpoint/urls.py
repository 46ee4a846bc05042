from django.urls import path

from mcp_endpoint import views

urlpatterns = [
    # No trailing slash: clients refuse APPEND_SLASH's redirect of a POST.
    path("mcp/<slug:channel_slug>", views.mcp, name="mcp"),
    path("citations/<str:token>", views.citation, name="mcp_citation"),
]
