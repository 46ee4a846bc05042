"""Runs the reader child (documents.ingestion.reader) on one file, under limits.

The child gets a time limit (killed with its whole process group, OCR included,
when it runs over) and a memory limit, so a file that would hang or crash a C
library fails only its own ingestion; it reads file after file until one of
them breaks it or its lifetime ends (documents.ingestion.reader_child).
Failures become UnreadableFile with a reason a person understands.
"""

import logging
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from documents.ingestion import formats
from documents.ingestion.parsed import UnreadableFile
from documents.ingestion.reader_child import CHILDREN

logger = logging.getLogger(__name__)

# How far from the start the %PDF- header may sit, and from the end %%EOF
# (both tolerate the junk some producers add, as PDF readers do).
HEADER_WINDOW = 1024
TRAILER_WINDOW = 2048

PDF_REASONS = {
    "empty": "The file is empty (0 bytes).",
    "not_pdf": "This is not a PDF file (it has no PDF header).",
    "encrypted": "The PDF is encrypted (password-protected). Remove the password "
    "and upload it again.",
    "truncated": "The PDF is truncated: the file ends early (an incomplete upload "
    "or download?).",
    "corrupt": "The PDF is corrupt and can't be read.",
    "unreadable": "The file could not be opened.",
    "no_pages": "The PDF has no pages.",
}


@dataclass(frozen=True)
class ReaderLimits:
    """What one reading may cost. Built from settings only (see
    documents.ingestion.parsers.reader_limits), and sent whole to the child, so
    that each limit has its one default in project/settings.py."""

    image_width: int
    max_pages: int
    timeout: float
    memory_mb: int
    page_render_timeout: float
    image_budget_bytes: int
    unpacked_budget_bytes: int
    ocr_enabled: bool
    ocr_languages: str
    ocr_max_pages: int
    ocr_page_timeout: float
    text_page_chars: int
    # A child reads this many files, or files of this many bytes in all, then
    # is replaced (documents.ingestion.reader_child).
    child_max_files: int
    child_max_bytes: int
    # The setting to name when the time limit is reached.
    timeout_setting: str = "PDF_PARSE_TIMEOUT"

    def soft_deadline(self) -> float:
        """When the child stops optional work (drawing, OCR): early enough to
        send what it read before the hard limit."""
        return max(self.timeout - min(30.0, self.timeout * 0.2), self.timeout * 0.5)


# What the parent enforces itself, not sent to the child.
PARENT_ONLY = ("timeout", "timeout_setting", "child_max_files", "child_max_bytes")


def child_request(
    path: Path,
    content_type: str,
    *,
    work_dir: Path,
    limits: ReaderLimits,
    charset: str | None = None,
) -> dict:
    """The child's instructions (protocol.Request): the format table's reader for
    `content_type`, and every limit."""
    fmt = formats.BY_TYPE[content_type]
    request = {
        key: value for key, value in asdict(limits).items() if key not in PARENT_ONLY
    }
    return request | {
        "format": content_type,
        "format_name": fmt.name,
        "reader": fmt.reader,
        "path": str(path),
        "out_dir": str(work_dir),
        "soft_deadline": limits.soft_deadline(),
        "hard_timeout": limits.timeout,
        "charset": charset,
    }


def read_in_child(
    path: Path,
    content_type: str,
    *,
    work_dir: Path,
    limits: ReaderLimits,
    charset: str | None = None,
) -> Iterator[dict]:
    """What the reader child says about the file, message by message as it
    reads (documents.ingestion.reader.protocol). Raises UnreadableFile
    (ReaderTimedOut past the time limit)."""
    request = child_request(
        path, content_type, work_dir=work_dir, limits=limits, charset=charset
    )
    messages = CHILDREN.read(
        request,
        size=path.stat().st_size,
        memory_mb=limits.memory_mb,
        timeout=limits.timeout,
        timeout_setting=limits.timeout_setting,
        max_files=limits.child_max_files,
        max_bytes=limits.child_max_bytes,
    )
    for message in messages:
        if message.get("kind") == "error":
            raise UnreadableFile(_reason(message, path, content_type, limits))
        yield message


def _reason(message: dict, path: Path, content_type: str, limits) -> str:
    code = message.get("code", "corrupt")
    if message.get("reason"):
        return message["reason"]
    if code == "too_many_pages":
        what = "The PDF" if content_type == formats.PDF else "The file"
        return (
            f"{what} has {message.get('page_count')} pages; the limit is "
            f"{limits.max_pages} (setting PDF_MAX_PAGES)."
        )
    if content_type == formats.PDF:
        if code == "no_pages":
            return PDF_REASONS["no_pages"]
        logger.info("PDFium could not open %s: %s", path, message.get("detail"))
        return classify_unopenable(path, code)
    the = formats.the(content_type)
    return f"{the[0].upper()}{the[1:]} is corrupt and can't be read."


def classify_unopenable(path: Path, code: str) -> str:
    """The reason PDFium could not open `path`, refined by looking at the bytes:
    PDFium says "format error" for empty, foreign and truncated files alike."""
    size = path.stat().st_size
    if size == 0:
        return PDF_REASONS["empty"]
    with path.open("rb") as handle:
        head = handle.read(HEADER_WINDOW)
        handle.seek(max(0, size - TRAILER_WINDOW))
        tail = handle.read()
    if code == "encrypted":
        return PDF_REASONS["encrypted"]
    if b"%PDF-" not in head:
        return PDF_REASONS["not_pdf"]
    if b"%%EOF" not in tail:
        return PDF_REASONS["truncated"]
    return PDF_REASONS.get(code, PDF_REASONS["corrupt"])
