from django.urls import path

from mcp_endpoint import auth, citation_pages, discovery, views

urlpatterns = [
    # No redirect between the two spellings: clients refuse APPEND_SLASH's
    # redirect of a POST. Both answer alike (project.prechecks reads both).
    path("mcp/<slug:channel_slug>", views.mcp, name="mcp"),
    path("mcp/<slug:channel_slug>/", views.mcp),
    path("citations/<str:token>", citation_pages.citation, name="mcp_citation"),
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
    path(
        "mcp/<slug:channel_slug>/server-card",
        discovery.server_card_view,
        name="mcp_server_card",
    ),
    path(".well-known/ai-catalog.json", discovery.ai_catalog, name="ai_catalog"),
    path(".well-known/mcp/catalog.json", discovery.mcp_catalog, name="mcp_catalog"),
    # Each channel is an OAuth protected resource (RFC 9728).
    path(
        ".well-known/oauth-protected-resource/mcp/<slug:channel_slug>",
        auth.channel_resource_metadata,
        name="mcp_resource_metadata",
    ),
    path(
        ".well-known/oauth-protected-resource",
        auth.site_resource_metadata,
        name="site_resource_metadata",
    ),
]
