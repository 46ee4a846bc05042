"""Which files Quire accepts, recognised by their content first.

A file's bytes decide its format whenever they can (the PDF header, the image
signatures, the members of a zip package, the streams of an OLE container); the
declared content type and the file name's extension decide only for text, or
when the content is too damaged to tell. Content types are compared ignoring
case and parameters, so `Text/Plain; charset=UTF-8` is plain text.
"""

import zipfile
from dataclasses import dataclass
from pathlib import PurePath
from typing import BinaryIO

from django.utils.http import parse_header_parameters

PDF = "application/pdf"
MARKDOWN = "text/markdown"
PLAIN_TEXT = "text/plain"
HTML = "text/html"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
EPUB = "application/epub+zip"
PNG = "image/png"
JPEG = "image/jpeg"
TIFF = "image/tiff"

TEXT_TYPES = (MARKDOWN, PLAIN_TEXT)
IMAGE_TYPES = (PNG, JPEG, TIFF)
# Read by the reader child process (documents.ingestion.reader).
CHILD_TYPES = (PDF, HTML, DOCX, PPTX, XLSX, EPUB, *IMAGE_TYPES)

NAMES = {
    PDF: "a PDF",
    MARKDOWN: "a Markdown file",
    PLAIN_TEXT: "a text file",
    HTML: "an HTML file",
    DOCX: "a Word document (.docx)",
    PPTX: "a PowerPoint presentation (.pptx)",
    XLSX: "an Excel workbook (.xlsx)",
    EPUB: "an EPUB e-book",
    PNG: "a PNG image",
    JPEG: "a JPEG image",
    TIFF: "a TIFF image",
}

_ALIASES = {
    "application/pdf": PDF,
    "application/x-pdf": PDF,
    "text/markdown": MARKDOWN,
    "text/x-markdown": MARKDOWN,
    "text/plain": PLAIN_TEXT,
    "text/html": HTML,
    "application/xhtml+xml": HTML,
    DOCX: DOCX,
    PPTX: PPTX,
    XLSX: XLSX,
    "application/epub+zip": EPUB,
    "image/png": PNG,
    "image/jpeg": JPEG,
    "image/jpg": JPEG,
    "image/pjpeg": JPEG,
    "image/tiff": TIFF,
    "image/x-tiff": TIFF,
}
_EXTENSIONS = {
    ".pdf": PDF,
    ".md": MARKDOWN,
    ".markdown": MARKDOWN,
    ".txt": PLAIN_TEXT,
    ".text": PLAIN_TEXT,
    ".html": HTML,
    ".htm": HTML,
    ".xhtml": HTML,
    ".docx": DOCX,
    ".pptx": PPTX,
    ".xlsx": XLSX,
    ".epub": EPUB,
    ".png": PNG,
    ".jpg": JPEG,
    ".jpeg": JPEG,
    ".tif": TIFF,
    ".tiff": TIFF,
}
# Types that say nothing about the content; the file name decides instead.
_UNINFORMATIVE = {
    "",
    "application/octet-stream",
    "binary/octet-stream",
    "application/zip",
    "application/x-zip-compressed",
}

# Legacy binary Office formats: recognised (by name or by their OLE streams) so
# that the refusal can say what the file is and what to do.
_LEGACY = {
    "doc": "a Word 97-2003 document (.doc)",
    "xls": "an Excel 97-2003 workbook (.xls)",
    "ppt": "a PowerPoint 97-2003 presentation (.ppt)",
}
_LEGACY_TYPES = {
    "application/msword": "doc",
    "application/vnd.ms-word": "doc",
    "application/vnd.ms-excel": "xls",
    "application/vnd.ms-powerpoint": "ppt",
}
_LEGACY_SAVE_AS = {"doc": "docx", "xls": "xlsx", "ppt": "pptx"}

SUPPORTED_EXTENSIONS = tuple(_EXTENSIONS)
LEGACY_EXTENSIONS = tuple(f".{kind}" for kind in _LEGACY)
SUPPORTED_DESCRIPTION = (
    "PDF, Word (.docx), PowerPoint (.pptx), Excel (.xlsx), HTML, EPUB, Markdown, "
    "plain text, or a PNG, JPEG or TIFF image"
)

OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
HEAD_BYTES = 8192


class Refused(Exception):
    """The file is of a kind Quire does not take; `reason` says which and why."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Sniffed:
    """What the bytes say: a content type, or `None` when they can't tell (text,
    or a damaged package); `encrypted` for password-protected Office files."""

    content_type: str | None = None
    encrypted: bool = False
    zip_without_package: bool = False


def legacy_refusal(kind: str) -> str:
    return (
        f"This is {_LEGACY[kind]}, an old binary format Quire does not read. Open "
        f"it in Office or LibreOffice, save it as .{_LEGACY_SAVE_AS[kind]} and "
        "upload that."
    )


def sniff(handle: BinaryIO) -> Sniffed:
    """The format the content shows (reads the head, and a zip's directory);
    raises Refused for legacy Office files. Leaves the handle at its start."""
    handle.seek(0)
    head = handle.read(HEAD_BYTES)
    try:
        if b"%PDF-" in head[:1024]:
            return Sniffed(PDF)
        if head.startswith(b"\x89PNG\r\n\x1a\n"):
            return Sniffed(PNG)
        if head.startswith(b"\xff\xd8\xff"):
            return Sniffed(JPEG)
        if head[:4] in (b"II*\x00", b"MM\x00*"):
            return Sniffed(TIFF)
        if head.startswith(OLE_MAGIC):
            return _sniff_ole(handle)
        if head.startswith(b"PK"):
            return _sniff_zip(handle)
        return Sniffed()
    finally:
        handle.seek(0)


def zip_format(names: set[str]) -> str | None:
    """The package format a zip's member names show, if any."""
    if "word/document.xml" in names:
        return DOCX
    if "ppt/presentation.xml" in names:
        return PPTX
    if "xl/workbook.xml" in names:
        return XLSX
    if "mimetype" in names or "META-INF/container.xml" in names:
        return EPUB
    # Strict OOXML and unusual producers name the main part differently; the
    # content types part says what it is.
    return None


def _sniff_zip(handle: BinaryIO) -> Sniffed:
    try:
        with zipfile.ZipFile(handle) as archive:
            names = set(archive.namelist())
            found = zip_format(names)
            if found is None and "[Content_Types].xml" in names:
                # Read a bounded prefix: the upload may be a zip bomb.
                with archive.open("[Content_Types].xml") as member:
                    types = member.read(200_000)
                for marker, content_type in (
                    (b"wordprocessingml", DOCX),
                    (b"presentationml", PPTX),
                    (b"spreadsheetml", XLSX),
                ):
                    if marker in types:
                        found = content_type
                        break
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, KeyError, RuntimeError):
        return Sniffed()  # truncated, corrupt or encrypted: the declared type decides
    if found is None:
        return Sniffed(zip_without_package=True)
    return Sniffed(found)


def _sniff_ole(handle: BinaryIO) -> Sniffed:
    import olefile

    try:
        with olefile.OleFileIO(handle) as ole:
            streams = {"/".join(entry) for entry in ole.listdir()}
    except (OSError, ValueError, IndexError, NotImplementedError):
        return Sniffed()
    if "EncryptedPackage" in streams or "EncryptionInfo" in streams:
        return Sniffed(encrypted=True)
    if "WordDocument" in streams:
        raise Refused(legacy_refusal("doc"))
    if "Workbook" in streams or "Book" in streams:
        raise Refused(legacy_refusal("xls"))
    if "PowerPoint Document" in streams:
        raise Refused(legacy_refusal("ppt"))
    return Sniffed()


def declared_type(content_type: str | None, filename: str) -> str | None:
    """The canonical type the upload's content type and file name claim, or None.
    Raises Refused for legacy Office types."""
    try:
        media_type, _ = parse_header_parameters(content_type or "")
    except ValueError:
        media_type = ""
    extension = PurePath(filename).suffix.lower()
    legacy = _LEGACY_TYPES.get(media_type) or (
        extension[1:] if extension[1:] in _LEGACY else None
    )
    if legacy:
        raise Refused(legacy_refusal(legacy))
    by_extension = _EXTENSIONS.get(extension)
    canonical = _ALIASES.get(media_type)
    if media_type in _UNINFORMATIVE:
        return by_extension
    if canonical == PLAIN_TEXT and by_extension in (MARKDOWN, HTML):
        return by_extension  # browsers often send .md files as text/plain
    return canonical


def resolve_content_type(
    content_type: str | None, filename: str, handle: BinaryIO | None = None
) -> str | None:
    """The canonical content type to store for an upload, or None if Quire does
    not take it. The content decides when it is recognisable (a DOCX without an
    extension is a DOCX; a PDF named .html is a PDF); otherwise the declared
    type, then the extension. A charset parameter is kept for text. Raises
    Refused, with the reason, for legacy Office files."""
    sniffed = sniff(handle) if handle is not None else Sniffed()
    if sniffed.content_type:
        return sniffed.content_type
    claimed = declared_type(content_type, filename)
    if sniffed.encrypted and claimed not in (DOCX, PPTX, XLSX):
        raise Refused(
            "This is an encrypted (password-protected) Office file. Remove the "
            "password and upload it again."
        )
    canonical = claimed
    if (
        canonical is None
        and handle is not None
        and _says_nothing(content_type, filename)
    ):
        canonical = _sniff_text(handle)
    if canonical is None:
        return None
    if canonical in TEXT_TYPES or canonical == HTML:
        try:
            _, params = parse_header_parameters(content_type or "")
        except ValueError:
            params = {}
        charset = params.get("charset", "").strip().lower()
        if charset and claimed == canonical:
            return f"{canonical}; charset={charset}"
    return canonical


def _says_nothing(content_type: str | None, filename: str) -> bool:
    """No informative content type and no extension: only the bytes can tell."""
    try:
        media_type, _ = parse_header_parameters(content_type or "")
    except ValueError:
        media_type = ""
    return media_type in _UNINFORMATIVE and not PurePath(filename).suffix


def _sniff_text(handle: BinaryIO) -> str | None:
    """HTML or plain text for a file that claims nothing, if its head is text."""
    handle.seek(0)
    head = handle.read(HEAD_BYTES)
    handle.seek(0)
    if not head or b"\x00" in head:
        return None
    try:
        text = head.decode("utf-8", errors="strict")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not just a character cut at the end
            return None
        text = head[: exc.start].decode("utf-8")
    start = text.lstrip("\ufeff \t\r\n").lower()
    if start.startswith(("<!doctype html", "<html")):
        return HTML
    return PLAIN_TEXT


def describe(content_type: str) -> str:
    """The format with its article ("a Word document (.docx)")."""
    media_type, _ = parse_header_parameters(content_type)
    return NAMES.get(media_type, f"a file of type {media_type or 'unknown'}")


def the(content_type: str) -> str:
    """The format with "the" ("the Word document (.docx)")."""
    return "the " + describe(content_type).split(" ", 1)[1]
