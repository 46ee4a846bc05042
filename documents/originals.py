"""How an uploaded original is served: one rule for the admin and citation links.

An original is whatever someone uploaded, so Quire's origin must never render
it as a page of its own: a PDF, an image Quire can show (not SVG, which runs
scripts) or plain text (Markdown included) is shown inline under its own,
fixed type; everything else, HTML first of all, is a download
(`application/octet-stream`, attachment). Every answer carries
`Content-Security-Policy: sandbox` (no scripts, forms, or same-origin rights
even for a type a browser might still render) and `X-Content-Type-Options:
nosniff` (no guessing a page out of a "text" file).
"""

from dataclasses import dataclass

from django.http import FileResponse
from django.utils.http import content_disposition_header

from documents.models import Document

# The stored type (without parameters) -> the type it is served inline as.
INLINE_TYPES = {
    "application/pdf": "application/pdf",
    "image/png": "image/png",
    "image/jpeg": "image/jpeg",
    "image/gif": "image/gif",
    "image/webp": "image/webp",
    "image/tiff": "image/tiff",
    "text/plain": "text/plain; charset=utf-8",
    "text/markdown": "text/plain; charset=utf-8",
}
DOWNLOAD_TYPE = "application/octet-stream"
HEADERS = {
    "Content-Security-Policy": "sandbox",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


@dataclass(frozen=True)
class Serving:
    """How one original is served: its type, inline or attachment, its name."""

    content_type: str
    inline: bool
    filename: str

    @property
    def disposition(self) -> str:
        return content_disposition_header(not self.inline, self.filename)


def serving(document: Document) -> Serving:
    """The rule above, for `document`."""
    stored = (document.content_type or "").split(";")[0].strip().lower()
    inline_type = INLINE_TYPES.get(stored)
    return Serving(
        content_type=inline_type or DOWNLOAD_TYPE,
        inline=inline_type is not None,
        filename=document.original_filename or f"document-{document.pk}",
    )


def original_response(document: Document) -> FileResponse:
    """The stored original of `document`, served by the rule above."""
    how = serving(document)
    response = FileResponse(
        document.file.open("rb"),
        content_type=how.content_type,
        as_attachment=not how.inline,
        filename=how.filename,
    )
    for name, value in HEADERS.items():
        response[name] = value
    return response


def presigned_parameters(document: Document) -> dict[str, str]:
    """The same rule for a storage that serves files itself (S3): the type and
    disposition its presigned URL must answer with."""
    how = serving(document)
    return {
        "ResponseContentType": how.content_type,
        "ResponseContentDisposition": how.disposition,
    }
