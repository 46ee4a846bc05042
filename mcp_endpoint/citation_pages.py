"""What a citation link opens: the original file (at its page), or the page
image with the quoted lines highlighted and the quote beside it.

Served to whoever holds the signed, expiring link (like the links to
originals); nothing else is reachable from it.
"""

import mimetypes

from django.core import signing
from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseForbidden,
    HttpResponseGone,
    HttpResponseRedirect,
)
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_GET, require_safe

from documents.access import client_address
from documents.originals import original_response
from documents.pageview import back_url
from mcp_endpoint import citations


def _refusal(request: HttpRequest, token: str, read):
    """What `read(token)` returns (its caller re-admitted), or the page that
    says why the link no longer opens."""
    try:
        return read(token, address=client_address(request))
    except signing.SignatureExpired:
        return HttpResponseGone("This link has expired; ask for a new one.")
    except signing.BadSignature:
        return HttpResponseForbidden("This link is not valid.")
    except citations.GrantEnded:
        return HttpResponseForbidden(
            "The key (or account) this link was made for no longer has access."
        )


def _cited(request: HttpRequest, token: str) -> citations.CitedPage | HttpResponse:
    target = _refusal(request, token, citations.read_citation_token)
    if isinstance(target, HttpResponse):
        return target
    cited = citations.cited_page(target)
    if cited is None:
        return HttpResponseGone("This page is no longer available.")
    return cited


@require_safe
def citation(request: HttpRequest, token: str) -> HttpResponse:
    """The original file behind a signed citation link (PDFs honour #page=<n>)."""
    document = _refusal(request, token, citations.document_for_token)
    if isinstance(document, HttpResponse):
        return document
    if document is None:
        return HttpResponseGone("This document is no longer available.")
    presigned = citations.stored_file_url(document)
    if presigned is not None:
        return HttpResponseRedirect(presigned)
    return original_response(document)


@require_GET
def citation_page(request: HttpRequest, token: str) -> HttpResponse:
    """The cited page with its quote highlighted (HTML)."""
    cited = _cited(request, token)
    if isinstance(cited, HttpResponse):
        return cited
    response = TemplateResponse(
        request,
        "citations/page.html",
        citations.page_view_context(
            cited,
            original_url=reverse("mcp_citation", args=[token]),
            image_url=reverse("mcp_citation_image", args=[token]),
            back_url=back_url(request),
        ),
    )
    response["X-Robots-Tag"] = "noindex"
    response["Referrer-Policy"] = "no-referrer"
    return response


@require_GET
def citation_page_image(request: HttpRequest, token: str) -> HttpResponse:
    """The image of the cited page."""
    cited = _cited(request, token)
    if isinstance(cited, HttpResponse):
        return cited
    image = cited.page.image
    if not image:
        raise Http404("This page has no image.")
    presigned = citations.stored_page_image_url(image)
    if presigned is not None:
        return HttpResponseRedirect(presigned)
    content_type = mimetypes.guess_type(image.name)[0] or "image/png"
    return FileResponse(image.open("rb"), content_type=content_type)
