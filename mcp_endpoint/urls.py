from django.urls import path

from mcp_endpoint import citation_pages, views

urlpatterns = [
    # No trailing slash: clients refuse APPEND_SLASH's redirect of a POST.
    path("mcp/<slug:channel_slug>", views.mcp, name="mcp"),
    path("citations/<str:token>", views.citation, name="mcp_citation"),
    path(
        "citations/<str:token>/page",
        citation_pages.citation_page,
        name="mcp_citation_page",
    ),
    path(
        "citations/<str:token>/image",
        citation_pages.citation_page_image,
        name="mcp_citation_image",
    ),
]
