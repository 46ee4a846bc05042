"""What parsers hand to the pipeline, and how they say a file is unreadable."""

from dataclasses import dataclass, field
from pathlib import Path


class UnreadableFile(Exception):
    """The file can't be ingested; `reason` is a sentence a person understands."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass
class ParsedPage:
    """One page: 1-based number, cleaned text, a rendered PNG (PDF and image
    pages), whether OCR read the text, and where its lines sit on the page:
    [start, end, x0, y0, x1, y1] with character offsets into `text` (end
    exclusive) and the box as fractions of the page, origin top left.

    `markdown` pages mark their headings in Markdown, PDF pages as a seventh
    item of a heading's line (its level: documents.ingestion.context); the
    headings of a `self_contained` page (a slide, a sheet) don't continue from
    the page before."""

    number: int
    text: str
    image_path: Path | None = None
    width: int | None = None
    height: int | None = None
    has_images: bool = False
    ocr: bool = False
    lines: list[list] = field(default_factory=list)
    markdown: bool = False
    self_contained: bool = False

    @property
    def has_text(self) -> bool:
        return bool(self.text.strip())


@dataclass
class ParsedDocument:
    """A parsed file: its pages in reading order, its own title (if any), the
    damage met on the way that did not stop it from being read (`warnings`),
    and what a person should know about how it was read (`notes`: OCR limits,
    page images left out)."""

    pages: list[ParsedPage]
    title: str = ""
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def has_text(self) -> bool:
        return any(page.has_text for page in self.pages)

    @property
    def ocr_pages(self) -> int:
        return sum(page.ocr for page in self.pages)

    def status_note(self) -> str:
        """What a person should know about a readable file: no extractable text
        (scanned, or blank), how it was read, and the damage met while reading
        it; "" if none."""
        notes: list[str] = []
        if not self.has_text:
            ocr_said = any(note.startswith("OCR is") for note in self.notes)
            if any(page.has_images for page in self.pages):
                notes.append(
                    "No extractable text: the pages are scanned images"
                    + (". " if ocr_said else " and OCR found no text on them. ")
                    + "The page images can still be viewed."
                )
            else:
                notes.append(
                    "No extractable text: the pages are blank or their text is "
                    "drawn as shapes"
                    + ("." if ocr_said else " that OCR could not read.")
                )
        notes.extend(self.notes)
        if self.warnings:
            notes.append(
                "The file is damaged; what could be read was kept. "
                + "; ".join(self.warnings)
            )
        return " ".join(notes)
