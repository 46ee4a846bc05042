"""PDF parsing: text per page and a PNG per page, read by PDFium in a child process.

The child (documents/ingestion/pdf_reader.py) runs with a time limit and a memory
limit, so a file that would hang or crash PDFium fails only its own ingestion.
Failures become UnreadableFile with a reason a person understands; a damaged
file that PDFium can still open yields whatever pages it can read, with the
problems listed in ParsedDocument.warnings.
"""

import html
import json
import logging
import re
import subprocess
import sys
from pathlib import Path

from documents.ingestion.parsed import (
    ParsedDocument,
    ParsedPage,
    UnreadableFile,
    clean_text,
)

logger = logging.getLogger(__name__)

READER_SCRIPT = Path(__file__).with_name("pdf_reader.py")

# How far from the start the %PDF- header may sit, and from the end %%EOF
# (both tolerate the junk some producers add, as PDF readers do).
HEADER_WINDOW = 1024
TRAILER_WINDOW = 2048

REASONS = {
    "empty": "The file is empty (0 bytes).",
    "not_pdf": "This is not a PDF file (it has no PDF header).",
    "encrypted": "The PDF is encrypted (password-protected). Remove the password "
    "and upload it again.",
    "truncated": "The PDF is truncated: the file ends early (an incomplete upload "
    "or download?).",
    "corrupt": "The PDF is corrupt and can't be read.",
    "unreadable": "The file could not be opened.",
    "no_pages": "The PDF has no pages.",
    "crashed": "The PDF reader crashed on this file; it is probably corrupt.",
}

_FILENAME_LIKE = re.compile(r"\.[A-Za-z0-9]{2,5}$")
_PLACEHOLDER_TITLES = {"untitled", "untitled document", "title", "document"}


def classify_unopenable(path: Path, code: str) -> str:
    """The reason PDFium could not open `path`, refined by looking at the bytes:
    PDFium says "format error" for empty, foreign and truncated files alike."""
    size = path.stat().st_size
    if size == 0:
        return REASONS["empty"]
    with path.open("rb") as handle:
        head = handle.read(HEADER_WINDOW)
        handle.seek(max(0, size - TRAILER_WINDOW))
        tail = handle.read()
    if code == "encrypted":
        return REASONS["encrypted"]
    if b"%PDF-" not in head:
        return REASONS["not_pdf"]
    if b"%%EOF" not in tail:
        return REASONS["truncated"]
    return REASONS.get(code, REASONS["corrupt"])


def clean_pdf_title(raw: str) -> str:
    """The PDF's Title entry if it looks like a real title, else "".

    Producers often leave the source file name ("loremipsum.jpg",
    "905_Precinct_NoOU"), a placeholder ("Untitled") or HTML entities there.
    """
    title = " ".join(html.unescape(raw.replace("\x00", "")).split())
    if title.lower() in _PLACEHOLDER_TITLES:
        return ""
    if _FILENAME_LIKE.search(title) or (" " not in title and "_" in title):
        return ""
    return title[:500]


def parse_pdf(
    path: Path,
    *,
    work_dir: Path,
    image_width: int,
    max_pages: int,
    timeout: float,
    memory_mb: int,
) -> ParsedDocument:
    """Text and a PNG (`image_width` px wide, written to `work_dir`) per page.

    Raises UnreadableFile for files that can't be opened (empty, not a PDF,
    encrypted, truncated, corrupt), have more than `max_pages` pages, take longer
    than `timeout` seconds or crash the reader.
    """
    if path.stat().st_size == 0:
        raise UnreadableFile(REASONS["empty"])
    command = [
        sys.executable,
        str(READER_SCRIPT),
        str(path),
        str(work_dir),
        str(image_width),
        str(max_pages),
        str(memory_mb),
    ]
    try:
        completed = subprocess.run(
            command, capture_output=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        raise UnreadableFile(
            f"Reading the PDF took longer than {timeout:g} seconds; it may be "
            "damaged or too complex."
        ) from None
    if completed.returncode != 0:
        stderr = completed.stderr.decode(errors="replace")
        logger.warning(
            "PDF reader exited with %s on %s: %s",
            completed.returncode,
            path,
            stderr[-2000:],
        )
        if "MemoryError" in stderr:
            raise UnreadableFile(
                f"Reading the PDF needed more than {memory_mb} MB of memory; it may "
                "be damaged or too complex."
            )
        raise UnreadableFile(REASONS["crashed"])
    result = json.loads(completed.stdout)
    if error := result.get("error"):
        if error == "too_many_pages":
            raise UnreadableFile(
                f"The PDF has {result['page_count']} pages; the limit is "
                f"{max_pages} (setting PDF_MAX_PAGES)."
            )
        if error == "no_pages":
            raise UnreadableFile(REASONS["no_pages"])
        logger.info("PDFium could not open %s: %s", path, result.get("detail"))
        raise UnreadableFile(classify_unopenable(path, error))
    pages: list[ParsedPage] = []
    warnings: list[str] = []
    for page in result["pages"]:
        pages.append(
            ParsedPage(
                number=page["number"],
                text=clean_text(page["text"]),
                image_path=work_dir / page["image"] if page["image"] else None,
                width=page["width"],
                height=page["height"],
                has_images=page["has_images"],
            )
        )
        warnings.extend(f"Page {page['number']}: {e}" for e in page["errors"])
    return ParsedDocument(
        pages=pages, title=clean_pdf_title(result["title"]), warnings=warnings
    )
