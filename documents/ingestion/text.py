"""Markdown and plain-text parsing.

Markdown is split into logical pages at its level-1 and level-2 headings (text
before the first heading joins the first page), so page citations point at a
section. Plain text is one logical page. Either way a page longer than
`max_page_chars` continues on the next page, split at a paragraph break, so
that no single page is unwieldy to show.
"""

import re

from documents.ingestion.cleaning import clean_text
from documents.ingestion.formats import bom_encoding
from documents.ingestion.parsed import UnreadableFile

_SECTION_HEADING = re.compile(r"^ {0,3}#{1,2}(?:[ \t]+|$)", re.MULTILINE)
_ANY_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_SETEXT_TITLE = re.compile(r"\A\s*(\S[^\n]*)\n=+[ \t]*$", re.MULTILINE)
# A line that opens or closes a fenced code block (headings inside are code).
MARKDOWN_FENCE = re.compile(r"^ {0,3}(```|~~~)")


def decode_text(data: bytes, charset: str | None) -> str:
    """Bytes to text: a byte-order mark wins, then the declared charset, then
    UTF-8, then Windows-1252 (which decodes any byte, so never fails)."""
    if encoding := bom_encoding(data):
        return data.decode(encoding, errors="replace")
    candidates = [charset] if charset else []
    candidates.append("utf-8")
    for encoding in candidates:
        try:
            return data.decode(encoding)
        except (LookupError, UnicodeDecodeError):
            continue
    return data.decode("cp1252", errors="replace")


def _split_long(text: str, max_chars: int) -> list[str]:
    parts: list[str] = []
    start = 0
    while len(text) - start > max_chars:
        end = start + max_chars
        cut = text.rfind("\n\n", start, end)
        if cut <= start:
            cut = text.rfind("\n", start, end)
        if cut <= start:
            cut = end
        parts.append(text[start:cut].strip())
        start = cut
    parts.append(text[start:].strip())
    return [part for part in parts if part]


def _markdown_sections(text: str) -> list[str]:
    sections: list[list[str]] = [[]]
    fenced = False
    seen_heading = False
    for line in text.split("\n"):
        if MARKDOWN_FENCE.match(line):
            fenced = not fenced
        # Headings inside fenced code blocks are code, not structure.
        elif not fenced and _SECTION_HEADING.match(line):
            if seen_heading:
                sections.append([])
            seen_heading = True
        sections[-1].append(line)
    joined = ("\n".join(lines).strip() for lines in sections)
    return [section for section in joined if section]


def markdown_title(text: str) -> str:
    """The first heading of a Markdown text (ATX `# x` or Setext `x\\n===`)."""
    setext = _SETEXT_TITLE.match(text)
    if setext:
        return setext.group(1).strip()
    heading = _ANY_HEADING.search(text)
    return heading.group(1).strip() if heading else ""


def page_texts_of(
    text: str, *, markdown: bool, split: bool, max_page_chars: int
) -> list[str]:
    """Cleaned page texts: Markdown split at its level-1 and level-2 headings
    when `split`, and any page longer than `max_page_chars` continued on the
    next page (cut at a paragraph break)."""
    sections = _markdown_sections(text) if split else [text]
    return [
        piece
        for section in sections
        for piece in _split_long(
            clean_text(section, keep_layout=markdown), max_page_chars
        )
    ]


def text_of(data: bytes, charset: str | None) -> str:
    """The text of a Markdown or plain-text file, newlines made "\\n". Raises
    UnreadableFile when the file is empty, holds only whitespace, or is binary
    rather than text."""
    if not data:
        raise UnreadableFile("The file is empty (0 bytes).")
    text = decode_text(data, charset)
    if "\x00" in text:
        raise UnreadableFile("This is not a text file (it contains binary data).")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise UnreadableFile("The file is empty (it holds only whitespace).")
    return text


def raw_pages(text: str, *, markdown: bool, max_page_chars: int) -> list[str]:
    """The text cut into pages before clean-up (Markdown at its level-1 and
    level-2 headings, any page longer than `max_page_chars` continued on the
    next), so that a large file is cleaned and chunked page by page as the
    pages arrive instead of all at once."""
    sections = _markdown_sections(text) if markdown else [text]
    return [
        piece for section in sections for piece in _split_long(section, max_page_chars)
    ]
