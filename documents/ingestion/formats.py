"""Which files Quire accepts (FORMATS, the one table of formats), recognised by
their content first.

A file's bytes decide its format whenever they can (the PDF header, the image
signatures, the members of a zip package, the streams of an OLE container); the
declared content type and the file name's extension decide only for text, or
when the content is too damaged to tell. Content types are compared ignoring
case and parameters, so `Text/Plain; charset=UTF-8` is plain text.
"""

import codecs
import re
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

SECTIONS = (
    "split into pages at level-1 and level-2 headings (a long section continues "
    "on the next page)"
)
PHYSICAL = "one page per physical page"


@dataclass(frozen=True)
class Format:
    """One format Quire reads: the one place a format is defined.

    Everything that names or handles formats is built from FORMATS: recognition
    (`sniff`, `declared_type`), the reader child's dispatch (`reader`), the
    upload form, the admin and the home page (`label`), the reasons given to
    people (`name`) and the get_pages tool's description (`pages`). Adding a
    format is one entry here plus its reader function.
    """

    content_type: str
    # In sentences, with its article: "This is not a PNG image".
    name: str
    # The words the upload form, the admin and the home page show.
    label: str
    extensions: tuple[str, ...]
    # "module.function" in documents.ingestion.reader, run in the child process.
    reader: str
    # How the file becomes pages, as the get_pages tool tells a model.
    pages: str
    # Other content types that mean this format.
    aliases: tuple[str, ...] = ()
    # The file starts with one of these (within the first `magic_within` bytes).
    magic: tuple[bytes, ...] = ()
    magic_within: int = 1
    # A zip package is this format when it has one of these members...
    package_parts: tuple[str, ...] = ()
    # ...or when its [Content_Types].xml mentions this (Strict OOXML and
    # unusual producers name the main part differently).
    content_types_marker: bytes = b""
    # Whether its pages know where each line sits (citation regions).
    line_positions: bool = False
    # Whether its pages hold Markdown (headings, lists, tables) that the page
    # view renders as the document's structure (documents.pageview).
    markdown_pages: bool = False

    @property
    def recognised_by_content(self) -> bool:
        return bool(self.magic or self.package_parts)

    @property
    def is_office(self) -> bool:
        return bool(self.content_types_marker)

    def starts(self, head: bytes) -> bool:
        """Whether a file beginning with `head` shows this format's signature."""
        return any(
            head.find(magic, 0, self.magic_within - 1 + len(magic)) >= 0
            for magic in self.magic
        )


FORMATS: tuple[Format, ...] = (
    Format(
        PDF,
        name="a PDF",
        label="PDF",
        extensions=(".pdf",),
        reader="pdf.read_pdf",
        pages=PHYSICAL,
        aliases=("application/x-pdf",),
        magic=(b"%PDF-",),
        magic_within=1024,
        line_positions=True,
    ),
    Format(
        DOCX,
        name="a Word document (.docx)",
        label="Word (.docx)",
        extensions=(".docx",),
        reader="office.read_docx",
        markdown_pages=True,
        pages=SECTIONS,
        package_parts=("word/document.xml",),
        content_types_marker=b"wordprocessingml",
    ),
    Format(
        PPTX,
        name="a PowerPoint presentation (.pptx)",
        label="PowerPoint (.pptx)",
        extensions=(".pptx",),
        reader="office.read_pptx",
        markdown_pages=True,
        pages="one page per slide",
        package_parts=("ppt/presentation.xml",),
        content_types_marker=b"presentationml",
    ),
    Format(
        XLSX,
        name="an Excel workbook (.xlsx)",
        label="Excel (.xlsx)",
        extensions=(".xlsx",),
        reader="office.read_xlsx",
        markdown_pages=True,
        pages="one page per sheet, as a table",
        package_parts=("xl/workbook.xml",),
        content_types_marker=b"spreadsheetml",
    ),
    Format(
        HTML,
        name="an HTML file",
        label="HTML",
        extensions=(".html", ".htm", ".xhtml"),
        reader="web.read_html",
        markdown_pages=True,
        pages=SECTIONS,
        aliases=("application/xhtml+xml",),
    ),
    Format(
        EPUB,
        name="an EPUB e-book",
        label="EPUB",
        extensions=(".epub",),
        reader="epub.read_epub",
        markdown_pages=True,
        pages=SECTIONS,
        package_parts=("mimetype", "META-INF/container.xml"),
    ),
    Format(
        MARKDOWN,
        name="a Markdown file",
        label="Markdown",
        extensions=(".md", ".markdown"),
        reader="text.read_markdown",
        markdown_pages=True,
        pages=SECTIONS,
        aliases=("text/x-markdown",),
    ),
    Format(
        PLAIN_TEXT,
        name="a text file",
        label="plain text",
        extensions=(".txt", ".text"),
        reader="text.read_plain_text",
        pages="one page (a long text continues on the next page)",
    ),
    Format(
        PNG,
        name="a PNG image",
        label="PNG",
        extensions=(".png",),
        reader="images.read_image_file",
        pages="one page per image, its text read by OCR",
        magic=(b"\x89PNG\r\n\x1a\n",),
        line_positions=True,
    ),
    Format(
        JPEG,
        name="a JPEG image",
        label="JPEG",
        extensions=(".jpg", ".jpeg"),
        reader="images.read_image_file",
        pages="one page per image, its text read by OCR",
        aliases=("image/jpg", "image/pjpeg"),
        magic=(b"\xff\xd8\xff",),
        line_positions=True,
    ),
    Format(
        TIFF,
        name="a TIFF image",
        label="TIFF",
        extensions=(".tif", ".tiff"),
        reader="images.read_image_file",
        pages="one page per frame, its text read by OCR",
        aliases=("image/x-tiff",),
        magic=(b"II*\x00", b"MM\x00*"),
        line_positions=True,
    ),
)

BY_TYPE = {fmt.content_type: fmt for fmt in FORMATS}
_ALIASES = {
    alias: fmt.content_type
    for fmt in FORMATS
    for alias in (fmt.content_type, *fmt.aliases)
}
_EXTENSIONS = {
    extension: fmt.content_type for fmt in FORMATS for extension in fmt.extensions
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


def labels() -> str:
    """Every format's words in one phrase ("PDF, Word (.docx), ... or TIFF"),
    for the upload form, the admin, the home page and refusals."""
    words = [fmt.label for fmt in FORMATS]
    return f"{', '.join(words[:-1])} or {words[-1]}"


def page_models() -> str:
    """How each format becomes pages, formats with the same model together."""
    grouped: dict[str, list[str]] = {}
    for fmt in FORMATS:
        grouped.setdefault(fmt.pages, []).append(fmt.label)
    return "; ".join(f"{', '.join(names)}: {model}" for model, names in grouped.items())


def pages_are_markdown(content_type: str) -> bool:
    """Whether pages of this content type hold Markdown (see Format)."""
    media_type, _ = parse_header_parameters(content_type)
    fmt = BY_TYPE.get(_ALIASES.get(media_type.lower(), media_type.lower()))
    return bool(fmt and fmt.markdown_pages)


def with_line_positions() -> str:
    """The formats whose pages know where their lines sit."""
    words = [fmt.label for fmt in FORMATS if fmt.line_positions]
    return f"{', '.join(words[:-1])} and {words[-1]}"


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
        for fmt in FORMATS:
            if fmt.starts(head):
                return Sniffed(fmt.content_type)
        if head.startswith(OLE_MAGIC):
            return _sniff_ole(handle)
        if head.startswith(b"PK"):
            return _sniff_zip(handle)
        return Sniffed()
    finally:
        handle.seek(0)


def zip_format(names: set[str]) -> str | None:
    """The package format a zip's member names show, if any."""
    for fmt in FORMATS:
        if any(part in names for part in fmt.package_parts):
            return fmt.content_type
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
                found = next(
                    (
                        fmt.content_type
                        for fmt in FORMATS
                        if fmt.is_office and fmt.content_types_marker in types
                    ),
                    None,
                )
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
    if sniffed.encrypted and not (claimed and BY_TYPE[claimed].is_office):
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
    if not BY_TYPE[canonical].recognised_by_content:
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


# Byte-order marks and the encodings they show; UTF-32's little-endian mark
# begins with UTF-16's, so it is looked for first.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
# The HTML standard's prescan looks for a <meta> charset in the first 1024 bytes.
_META_BYTES = 1024
_META_CHARSET = re.compile(
    rb"""<meta\b[^>]*?\bcharset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.IGNORECASE
)


def bom_encoding(data: bytes) -> str | None:
    """The encoding a byte-order mark at the start of `data` shows, or None."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return encoding
    return None


def html_encoding(data: bytes, declared: str | None = None) -> str | None:
    """The encoding of an HTML file: a byte-order mark, then the charset the
    upload declared, then UTF-8 if the bytes are UTF-8 (a page saved again as
    UTF-8 often keeps its old <meta>, and legacy text is almost never valid
    UTF-8), then a <meta> charset near the start; None when nothing says (the
    reader then guesses from the bytes).

    A <meta> naming UTF-16 or UTF-32 in a file without a byte-order mark was
    read in an ASCII-compatible encoding to be found at all, so it means UTF-8
    (as browsers take it)."""
    if encoding := bom_encoding(data):
        return encoding
    if declared and (known := _known_encoding(declared)):
        return known
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            return "utf-8"
    match = _META_CHARSET.search(data, 0, _META_BYTES)
    if match is None:
        return None
    found = _known_encoding(match.group(1).decode("ascii"))
    if found and found.startswith(("utf-16", "utf-32")):
        return "utf-8"
    return found


def _known_encoding(name: str) -> str | None:
    try:
        return codecs.lookup(name.strip()).name
    except LookupError:
        return None


def text_head(head: bytes) -> str | None:
    """The start of a file as text, if it is text: decoded by its byte-order
    mark, else as UTF-8; None for binary data (NUL bytes or invalid UTF-8). A
    character cut at the end of the head is dropped."""
    if encoding := bom_encoding(head):
        decoder = codecs.getincrementaldecoder(encoding)(errors="strict")
        try:
            text = decoder.decode(head)
        except UnicodeDecodeError:
            return None
        return None if "\x00" in text else text.lstrip("\ufeff")
    if b"\x00" in head:
        return None
    try:
        return head.decode("utf-8", errors="strict")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not just a character cut at the end
            return None
        return head[: exc.start].decode("utf-8")


def looks_binary(head: bytes) -> bool:
    """Whether the head holds NUL bytes that no byte-order mark accounts for
    (UTF-16 text is half NUL bytes)."""
    if bom_encoding(head):
        return text_head(head) is None
    return b"\x00" in head


def _sniff_text(handle: BinaryIO) -> str | None:
    """HTML or plain text for a file that claims nothing, if its head is text."""
    handle.seek(0)
    head = handle.read(HEAD_BYTES)
    handle.seek(0)
    text = text_head(head) if head else None
    if text is None:
        return None
    start = text.lstrip("\ufeff \t\r\n").lower()
    if start.startswith(("<!doctype html", "<html")):
        return HTML
    return PLAIN_TEXT


def describe(content_type: str) -> str:
    """The format with its article ("a Word document (.docx)")."""
    media_type, _ = parse_header_parameters(content_type)
    fmt = BY_TYPE.get(media_type)
    return fmt.name if fmt else f"a file of type {media_type or 'unknown'}"


def label_of(content_type: str) -> str:
    """The words the admin and list_documents show for a format ("Word
    (.docx)"), or the media type of one Quire does not read."""
    media_type, _ = parse_header_parameters(content_type)
    fmt = BY_TYPE.get(media_type)
    return fmt.label if fmt else media_type or "unknown"


def the(content_type: str) -> str:
    """The format with "the" ("the Word document (.docx)")."""
    return "the " + describe(content_type).split(" ", 1)[1]
