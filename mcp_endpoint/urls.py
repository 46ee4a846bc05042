from django.urls import path

from mcp_endpoint import views

urlpatterns = [
    # No redirect between the two spellings: clients refuse APPEND_SLASH's
    # redirect of a POST. Both answer alike (project.prechecks reads both).
    path("mcp/<slug:channel_slug>", views.mcp, name="mcp"),
    path("mcp/<slug:channel_slug>/", views.mcp),
    path("citations/<str:token>", views.citation, name="mcp_citation"),
]
