"""What the reader child says, one JSON object per line on stdout.

- {"kind": "document", "title", "title_candidate", "page_count"?}: once, first.
- {"kind": "page", "number", "text", "lines", "image", "width", "height",
  "has_images", "ocr", "markdown", "split", "notes"}: one per page, in order.
  `lines` are [start, end, x0, y0, x1, y1]: offsets into `text` and the line's
  box as fractions of the page, origin top left. `markdown` pages may be split
  at headings (`split`) and continue on further pages when long.
- {"kind": "end", "notes"}: the notes that concern the whole document.
- {"kind": "error", "code", "reason", ...}: the file can't be read (no "end").
"""

import json
import sys
import time
from dataclasses import dataclass, field


class Refusal(Exception):
    """The file can't be read; `code` is machine-readable, `reason` for people."""

    def __init__(self, code: str, reason: str = "", **extra):
        super().__init__(reason or code)
        self.code = code
        self.reason = reason
        self.extra = extra


def emit(message: dict) -> None:
    sys.stdout.write(json.dumps(message, ensure_ascii=False) + "\n")
    sys.stdout.flush()


@dataclass
class Request:
    """The parent's instructions and limits (documents.ingestion.reading)."""

    format: str
    path: str
    out_dir: str
    image_width: int = 1000
    max_pages: int = 2000
    memory_mb: int = 3072
    # Past this many seconds from the start, optional work (rendering, OCR) is
    # skipped so that the document is still read within the parent's limit.
    soft_deadline: float = 240.0
    # The parent kills the child then; the child's own alarm covers a dead parent.
    hard_timeout: float = 300.0
    page_render_timeout: float = 5.0
    image_budget_bytes: int = 16 * 1024 * 1024
    ocr_enabled: bool = True
    ocr_languages: str = "eng"
    ocr_max_pages: int = 100
    ocr_page_timeout: float = 30.0
    started: float = field(default_factory=time.monotonic)

    def seconds_left(self) -> float:
        return self.soft_deadline - (time.monotonic() - self.started)

    def past_deadline(self) -> bool:
        return self.seconds_left() <= 0


def page_message(
    number: int,
    text: str = "",
    *,
    lines: list | None = None,
    image: str | None = None,
    width: int | None = None,
    height: int | None = None,
    has_images: bool = False,
    ocr: bool = False,
    markdown: bool = False,
    split: bool = False,
    notes: list[str] | None = None,
) -> dict:
    return {
        "kind": "page",
        "number": number,
        "text": text,
        "lines": lines or [],
        "image": image,
        "width": width,
        "height": height,
        "has_images": has_images,
        "ocr": ocr,
        "markdown": markdown,
        "split": split,
        "notes": notes or [],
    }
