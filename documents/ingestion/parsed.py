"""What parsers hand to the pipeline, and how they say a file is unreadable."""

import functools
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path


class UnreadableFile(Exception):
    """The file can't be ingested; `reason` is a sentence a person understands."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass
class ParsedPage:
    """One page: 1-based number, cleaned text and (PDF only) a rendered PNG."""

    number: int
    text: str
    image_path: Path | None = None
    width: int | None = None
    height: int | None = None
    has_images: bool = False

    @property
    def has_text(self) -> bool:
        return bool(self.text.strip())


@dataclass
class ParsedDocument:
    """A parsed file: its pages in reading order, its own title (if any) and the
    problems met on the way that did not stop it from being read."""

    pages: list[ParsedPage]
    title: str = ""
    warnings: list[str] = field(default_factory=list)

    @property
    def has_text(self) -> bool:
        return any(page.has_text for page in self.pages)

    def status_note(self) -> str:
        """What a person should know about a readable file: no extractable text
        (scanned, or blank) and the damage met while reading it; "" if none."""
        notes: list[str] = []
        if not self.has_text:
            if any(page.has_images for page in self.pages):
                notes.append(
                    "No extractable text: the pages are scanned images and OCR is "
                    "not available. The page images can still be viewed."
                )
            else:
                notes.append(
                    "No extractable text: the pages are blank or their text is "
                    "drawn as shapes, and OCR is not available."
                )
        if self.warnings:
            notes.append(
                "The file is damaged; what could be read was kept. "
                + "; ".join(self.warnings)
            )
        return " ".join(notes)


# PDFium marks a hyphen that breaks a word at a line end with U+0002.
_BROKEN_WORD = re.compile(r"\x02[ \t]*\n[ \t]*")
_SPACES = re.compile(r"[ \t\u00a0]+")
_BLANK_LINES = re.compile(r"\n{3,}")
# Tag characters and the supplementary private-use planes.
_ASTRAL_DROPPED = re.compile("[\U000e0000-\U000e007f\U000f0000-\U0010ffff]")
# Newline, tab, and the zero-width (non-)joiners that Persian and Indic text need.
_KEPT = "\n\t\u200c\u200d"


@functools.cache
def _dropped_characters() -> dict[int, str | None]:
    """str.translate table: the Basic Multilingual Plane's control, format,
    private-use and surrogate code points removed (vertical tab and form feed
    become spaces). _ASTRAL_DROPPED covers the other planes."""
    table: dict[int, str | None] = {
        code: None
        for code in range(0x10000)
        if unicodedata.category(chr(code)) in ("Cc", "Cf", "Co", "Cs")
        and chr(code) not in _KEPT
    }
    table.update({0x0B: " ", 0x0C: " "})
    return table


def clean_text(text: str, *, keep_layout: bool = False) -> str:
    """Text fit for storage and search: one newline style, broken words joined,
    control and private-use characters dropped (PostgreSQL rejects NUL), runs of
    spaces collapsed unless `keep_layout` (Markdown, where indentation means
    something)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _BROKEN_WORD.sub("", text).replace("\x02", "-")
    text = _ASTRAL_DROPPED.sub("", text.translate(_dropped_characters()))
    if keep_layout:
        text = "\n".join(line.rstrip() for line in text.split("\n"))
    else:
        text = _SPACES.sub(" ", text)
        text = "\n".join(line.strip() for line in text.split("\n"))
    return _BLANK_LINES.sub("\n\n", text).strip()
