"""What the reader child says, one JSON object per line on stdout.

- {"kind": "document", "title", "title_candidate", "page_count"?}: once, first.
- {"kind": "page", "number", "text", "lines", "image", "width", "height",
  "has_images", "ocr", "markdown", "plain", "split", "notes"}: one per page, in
  order. `lines` are [start, end, x0, y0, x1, y1]: offsets into `text` and the
  line's box as fractions of the page, origin top left. `markdown` and `plain`
  pages are flowing text without line positions: they may be split at headings
  (`split`) and continue on further pages when long. A `self_contained` page's
  headings (a slide's title, a sheet's name) don't continue from the page
  before.
- {"kind": "image", "number", "image", "width", "height", "notes"}: the image
  of a page sent without one, drawn after its text was sent (PDF pages with a
  text layer), before the next page.
- {"kind": "end", "notes"}: the notes that concern the whole document.
- {"kind": "error", "code", "reason", ...}: the file can't be read (no "end").
"""

import json
import sys
import time
from collections.abc import Callable
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
    """The parent's instructions and limits (documents.ingestion.reading builds
    it from settings; nothing here has a default of its own)."""

    format: str
    # In sentences, with its article ("a Word document (.docx)").
    format_name: str
    # "module.function" in this package that reads the format.
    reader: str
    path: str
    out_dir: str
    image_width: int
    max_pages: int
    memory_mb: int
    # Past this many seconds from the start, optional work (rendering, OCR) is
    # skipped so that the document is still read within the parent's limit.
    soft_deadline: float
    # The parent kills the child then; the child's own alarm covers a dead parent.
    hard_timeout: float
    page_render_timeout: float
    image_budget_bytes: int
    # Bytes the reader may unpack from a zip package (Office, EPUB), counted as
    # they are read: a member read twice counts twice.
    unpacked_budget_bytes: int
    ocr_enabled: bool
    ocr_languages: str
    ocr_max_pages: int
    ocr_page_timeout: float
    # Text files: pages longer than this continue on the next page.
    text_page_chars: int
    charset: str | None = None
    # Injected by tests that run a reader in-process on a controlled clock.
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)
    started: float | None = None

    def __post_init__(self) -> None:
        if self.started is None:
            self.started = self.clock()

    def seconds_left(self) -> float:
        return self.soft_deadline - (self.clock() - self.started)

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
    plain: bool = False,
    split: bool = False,
    self_contained: bool = False,
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
        "plain": plain,
        "split": split,
        "self_contained": self_contained,
        "notes": notes or [],
    }
