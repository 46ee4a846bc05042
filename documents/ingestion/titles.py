"""Titles a person would give: a file's own title only when it looks like one.

Producers leave all sorts in a PDF's Title entry: the source file's name
("loremipsum.jpg", "905_Precinct_NoOU"), a placeholder ("Untitled"), the
program ("Adobe Photoshop PDF", "Microsoft Word - report.docx"), HTML entities.
Those are passed over for the first heading (or the first page's largest type),
and failing that the file name without its extension.
"""

import html
import re
from pathlib import PurePath

MAX_TITLE_CHARS = 300

_PLACEHOLDERS = {
    "untitled",
    "untitled document",
    "title",
    "document",
    "new document",
    "presentation",
    "powerpoint presentation",
    "slide 1",
    "sheet1",
    "book1",
    "no title",
    "none",
    "unknown",
    "contents",
    "table of contents",
    "abstract",
    "introduction",
    "preface",
    "index",
}
# arXiv's identifier stamp, set large in the margin of preprints.
_IDENTIFIER = re.compile(r"^(arxiv:|doi:|isbn|issn)\s*\S", re.IGNORECASE)
_PROGRAM_PREFIX = re.compile(
    r"^(microsoft (office )?(word|excel|powerpoint)|untitled)\s*[-–:]", re.IGNORECASE
)
_FILENAME_LIKE = re.compile(r"\.[A-Za-z0-9]{2,5}$")
_PATH_LIKE = re.compile(r"^([A-Za-z]:)?[\\/]|[\\/].*[\\/]")
# Words of program and device names; a "title" made only of these is a producer.
_PRODUCER_WORDS = {
    "acrobat",
    "adobe",
    "canon",
    "creator",
    "distiller",
    "document",
    "epson",
    "excel",
    "ghostscript",
    "hp",
    "illustrator",
    "image",
    "imagemagick",
    "indesign",
    "latex",
    "libreoffice",
    "microsoft",
    "office",
    "openoffice",
    "pdf",
    "pdfium",
    "photoshop",
    "powerpoint",
    "quartz",
    "scan",
    "scanned",
    "scanner",
    "tex",
    "word",
    "writer",
    "xerox",
}


def tidy(raw: str) -> str:
    """Entities decoded, NULs dropped, whitespace collapsed."""
    return " ".join(html.unescape((raw or "").replace("\x00", "")).split())


def looks_like_title(raw: str, *, producer: str = "") -> bool:
    """Whether a file's own title is one a person would give."""
    title = tidy(raw)
    lowered = title.lower()
    if sum(char.isalpha() for char in title) < 3 or len(title) > MAX_TITLE_CHARS:
        return False
    if lowered.strip(" .") in _PLACEHOLDERS or _PROGRAM_PREFIX.match(title):
        return False
    if _IDENTIFIER.match(title) or not (title[0].isalnum() or title[0] in "\"'“‘¿¡"):
        return False
    if _FILENAME_LIKE.search(title) or _PATH_LIKE.search(title):
        return False
    if " " not in title and (
        title.islower()
        or any(char in title for char in "_-.")
        or any(char.isdigit() for char in title)
    ):
        return False  # "habibi", "Unstructured-test-doc", a slug or an id
    words = re.findall(r"[a-z]+", lowered)
    if words and all(word in _PRODUCER_WORDS for word in words):
        return False
    producer = tidy(producer).lower()
    return not (producer and lowered in producer)


def choose_title(*candidates: str, producer: str = "") -> str:
    """The first candidate that looks like a title, tidied; "" if none does."""
    for candidate in candidates:
        if candidate and looks_like_title(candidate, producer=producer):
            return tidy(candidate)[:MAX_TITLE_CHARS]
    return ""


_LINE_MARKUP = re.compile(r"^[#>*_\s]+|[*_\s]+$")
MAX_LINE_TITLE_WORDS = 15


def first_line_title(text: str) -> str:
    """The first line of a text when it stands alone as a title does (a
    document without headings often opens with its title): short, and not a
    sentence. Markdown's marks around it are dropped; "" otherwise."""
    for raw in text.splitlines():
        line = _LINE_MARKUP.sub("", raw).strip()
        if not line:
            continue
        if len(line.split()) > MAX_LINE_TITLE_WORDS or line.endswith(tuple(".,;:")):
            return ""
        return line
    return ""


def file_title(filename: str) -> str:
    """The file name without its extension (or the name itself)."""
    return PurePath(filename).stem.strip() or filename
