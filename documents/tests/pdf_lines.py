"""Page.lines for a PDF page in tests, computed from PDFium's own character
boxes, while ingestion does not fill them yet.

Each PDFium text line (its characters up to "\\r\\n") becomes [start, end, x0, y0,
x1, y1]: the line's span in the stored page text (found ignoring whitespace,
in reading order) and the union of its characters' boxes as fractions of the
page, origin top left.
"""

from pathlib import Path

import pypdfium2 as pdfium

from documents.regions import locate, squeeze


def pdfium_lines(path: Path, number: int) -> list[tuple[str, list[tuple]]]:
    """(text, character boxes in points) of each text line of page `number`
    (1-based), as PDFium reads it; boxes are (left, bottom, right, top)."""
    document = pdfium.PdfDocument(str(path))
    try:
        page = document[number - 1]
        textpage = page.get_textpage()
        text = textpage.get_text_range()
        lines: list[tuple[str, list[tuple]]] = []
        chars: list[str] = []
        boxes: list[tuple] = []
        for index, char in enumerate(text):
            if char in "\r\n":
                if chars:
                    lines.append(("".join(chars), boxes))
                chars, boxes = [], []
                continue
            chars.append(char)
            if not char.isspace():
                boxes.append(textpage.get_charbox(index, loose=True))
        if chars:
            lines.append(("".join(chars), boxes))
        return lines
    finally:
        document.close()


def page_size(path: Path, number: int) -> tuple[float, float]:
    document = pdfium.PdfDocument(str(path))
    try:
        return document[number - 1].get_size()
    finally:
        document.close()


def union(boxes: list[tuple], size: tuple[float, float]) -> tuple[float, ...]:
    """The boxes' union as (x0, y0, x1, y1) fractions, origin top left."""
    width, height = size
    return (
        round(min(b[0] for b in boxes) / width, 4),
        round(1 - max(b[3] for b in boxes) / height, 4),
        round(max(b[2] for b in boxes) / width, 4),
        round(1 - min(b[1] for b in boxes) / height, 4),
    )


def lines_for_page(path: Path, number: int, page_text: str) -> list[list]:
    """Page.lines for the stored `page_text` of page `number` of `path`."""
    size = page_size(path, number)
    squeezed = squeeze(page_text)
    lines = []
    position = 0
    for text, boxes in pdfium_lines(path, number):
        if not boxes:
            continue
        span = locate(squeezed, text, position)
        if span is None or span[0] < position:
            continue  # text the stored page doesn't have as read (cleaned away)
        lines.append([span[0], span[1], *union(boxes, size)])
        position = span[1]
    return lines
