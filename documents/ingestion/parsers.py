"""Which files Quire accepts, and turning one into pages.

Supported: PDF (documents.ingestion.pdf), Markdown and plain text
(documents.ingestion.text). Content types are compared ignoring case and
parameters, so `Text/Plain; charset=UTF-8` is plain text.
"""

from pathlib import Path, PurePath

from django.conf import settings
from django.utils.http import parse_header_parameters

from documents.ingestion.parsed import ParsedDocument, UnreadableFile
from documents.ingestion.pdf import parse_pdf
from documents.ingestion.text import parse_text

PDF = "application/pdf"
MARKDOWN = "text/markdown"
PLAIN_TEXT = "text/plain"

_ALIASES = {
    "application/pdf": PDF,
    "application/x-pdf": PDF,
    "text/markdown": MARKDOWN,
    "text/x-markdown": MARKDOWN,
    "text/plain": PLAIN_TEXT,
}
_EXTENSIONS = {
    ".pdf": PDF,
    ".md": MARKDOWN,
    ".markdown": MARKDOWN,
    ".txt": PLAIN_TEXT,
    ".text": PLAIN_TEXT,
}
# Types that say nothing about the content; the file name decides instead.
_UNINFORMATIVE = {"", "application/octet-stream", "binary/octet-stream"}

SUPPORTED_DESCRIPTION = "PDF (.pdf), Markdown (.md) or plain text (.txt)"
SUPPORTED_EXTENSIONS = tuple(_EXTENSIONS)

# Defaults for limits that settings may override.
DEFAULT_PDF_TIMEOUT = 300.0
DEFAULT_PDF_MEMORY_MB = 3072
DEFAULT_TEXT_PAGE_CHARS = 20_000


def resolve_content_type(content_type: str | None, filename: str) -> str | None:
    """The canonical content type to store for an upload, or None if Quire does
    not support it. A charset parameter is kept (text needs it to decode)."""
    try:
        media_type, params = parse_header_parameters(content_type or "")
    except ValueError:
        return None
    extension = PurePath(filename).suffix.lower()
    canonical = _ALIASES.get(media_type)
    if media_type in _UNINFORMATIVE:
        canonical = _EXTENSIONS.get(extension)
    elif canonical == PLAIN_TEXT and _EXTENSIONS.get(extension) == MARKDOWN:
        canonical = MARKDOWN  # browsers often send .md files as text/plain
    if canonical is None:
        return None
    charset = params.get("charset", "").strip().lower()
    if charset and canonical != PDF:
        return f"{canonical}; charset={charset}"
    return canonical


def parse_file(path: Path, content_type: str, *, work_dir: Path) -> ParsedDocument:
    """Pages of the file at `path`, PDF page images written to `work_dir`.

    Raises UnreadableFile with a reason a person understands.
    """
    media_type, params = parse_header_parameters(content_type)
    with path.open("rb") as handle:
        if handle.read(5) == b"%PDF-":
            media_type = PDF  # a PDF sent as text (or octet-stream) is still a PDF
    if media_type == PDF:
        return parse_pdf(
            path,
            work_dir=work_dir,
            image_width=settings.PAGE_IMAGE_WIDTH,
            max_pages=settings.PDF_MAX_PAGES,
            timeout=getattr(settings, "PDF_PARSE_TIMEOUT", DEFAULT_PDF_TIMEOUT),
            memory_mb=getattr(settings, "PDF_PARSE_MEMORY_MB", DEFAULT_PDF_MEMORY_MB),
        )
    if media_type in (MARKDOWN, PLAIN_TEXT):
        return parse_text(
            path,
            markdown=media_type == MARKDOWN,
            charset=params.get("charset"),
            max_page_chars=getattr(
                settings, "TEXT_PAGE_MAX_CHARS", DEFAULT_TEXT_PAGE_CHARS
            ),
        )
    raise UnreadableFile(f"Unsupported file type {content_type!r}.")
