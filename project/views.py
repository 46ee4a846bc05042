"""The site's own pages: the landing page "View site" leads to, and the
favicon browsers ask for at /favicon.ico."""

from django.conf import settings
from django.http import FileResponse, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_safe

from documents import access
from documents.ingestion import formats

FAVICON = settings.BASE_DIR / "static" / "quire" / "favicon.ico"


@require_safe
def home(request: HttpRequest) -> HttpResponse:
    """What Quire is and where to go next; a signed-in person also sees the MCP
    URLs of the channels they curate or read."""
    channels = access.channels_for(request.user, access.READ).order_by("name")
    return render(
        request,
        "quire/home.html",
        {
            "channels": [
                (channel, request.build_absolute_uri(channel.mcp_path))
                for channel in channels
            ],
            "mcp_enabled": settings.MCP_ENABLED,
            "formats": formats.labels(),
        },
    )


@require_safe
@cache_control(max_age=86400, public=True)
def favicon(request: HttpRequest) -> FileResponse:
    return FileResponse(FAVICON.open("rb"), content_type="image/x-icon")
