"""HTML to Markdown text: headings, paragraphs, lists, tables and code kept.

Used for the HTML that Word documents (through mammoth) and EPUB chapters are
made of, where everything in the body is content. Tables become Markdown
tables (one row per line), so that cell values stay readable in order; links,
emphasis and images are reduced to their text (an image to its alt text).
"""

import re

from lxml import etree
from lxml import html as lxml_html

_SKIPPED = {
    "script",
    "style",
    "head",
    "title",
    "meta",
    "link",
    "noscript",
    "template",
    "svg",
    "math",
    "iframe",
    "object",
    "button",
    "select",
    "input",
    "form",
}
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_BLOCKS = {
    "p",
    "div",
    "section",
    "article",
    "main",
    "header",
    "footer",
    "aside",
    "nav",
    "figure",
    "figcaption",
    "address",
    "dl",
    "dt",
    "dd",
    "body",
    "html",
    "center",
    "caption",
    "details",
    "summary",
}
# Whitespace but the line-break marker: source newlines in HTML are spaces.
_SPACES = re.compile(r"[^\S\x0b]+")
BREAK = "\x0b"


def parse_html(data: bytes | str):
    """An lxml tree of (possibly broken) HTML or XHTML, or None if empty."""
    if isinstance(data, bytes) and not data.strip():
        return None
    data = _without_internal_subset(data)
    parser = lxml_html.HTMLParser(
        remove_comments=True, remove_pis=True, no_network=True, recover=True
    )
    try:
        return lxml_html.document_fromstring(data, parser=parser)
    except (etree.ParserError, ValueError):
        return None


# A DOCTYPE with an internal subset ([ <!ENTITY ...> ]), as EPUB chapters carry:
# the HTML parser ends the declaration at the first ">" and shows the rest
# ("]>") as text. Quoted values may hold "]" and ">".
_INTERNAL_SUBSET = re.compile(
    r"""<!DOCTYPE[^\[>]*\[(?:[^\]"']|"[^"]*"|'[^']*')*\]\s*>""", re.IGNORECASE
)
_INTERNAL_SUBSET_BYTES = re.compile(_INTERNAL_SUBSET.pattern.encode(), re.IGNORECASE)
# The declaration comes before the root element, so only the head is searched.
_PROLOGUE_CHARS = 1024 * 1024


def _without_internal_subset(data: bytes | str) -> bytes | str:
    pattern = _INTERNAL_SUBSET_BYTES if isinstance(data, bytes) else _INTERNAL_SUBSET
    match = pattern.search(data, 0, _PROLOGUE_CHARS)
    if match is None:
        return data
    return data[: match.start()] + data[match.end() :]


def to_markdown(root) -> str:
    """The Markdown text of an lxml element (a whole document or a body)."""
    writer = _Writer()
    writer.block(root)
    return writer.result()


class _Writer:
    def __init__(self) -> None:
        self.blocks: list[str] = []

    def result(self) -> str:
        return "\n\n".join(block for block in self.blocks if block.strip())

    def add(self, text: str) -> None:
        if text.strip():
            self.blocks.append(text)

    def block(self, element, depth: int = 0) -> None:
        """Walk block-level content, gathering runs of inline content."""
        inline: list[str] = []

        def flush() -> None:
            self.add(_collapse("".join(inline)))
            inline.clear()

        if element.text:
            inline.append(element.text)
        for child in element:
            tag = _tag(child)
            if tag is None or tag in _SKIPPED:
                pass
            elif tag in _HEADINGS:
                flush()
                self.add("#" * _HEADINGS[tag] + " " + _inline_text(child))
            elif tag in ("ul", "ol"):
                flush()
                self.add("\n".join(_list_items(child, depth)))
            elif tag == "table":
                flush()
                self.add(_table(child))
            elif tag == "pre":
                flush()
                code = child.text_content().strip("\n")
                if code.strip():
                    self.add(f"```\n{code}\n```")
            elif tag == "blockquote":
                flush()
                inner = _Writer()
                inner.block(child, depth)
                quoted = inner.result()
                if quoted:
                    self.add("\n".join(f"> {line}" for line in quoted.split("\n")))
            elif tag == "hr":
                flush()
            elif tag == "br":
                inline.append(BREAK)
            elif tag in _BLOCKS or tag == "li":
                flush()
                self.block(child, depth)
            else:
                inline.append(_inline_text(child, keep_breaks=True))
            if child.tail:
                inline.append(child.tail)
        flush()


def _tag(element) -> str | None:
    tag = element.tag
    if not isinstance(tag, str):
        return None  # comments, processing instructions, entities
    # "{namespace}name" from XML parsers, "prefix:name" (epub:switch) from HTML.
    return tag.rsplit("}", 1)[-1].rsplit(":", 1)[-1].lower()


def _inline_text(element, *, keep_breaks: bool = False) -> str:
    """An element's text as one line: images by their alt text, footnote
    back-links dropped."""
    parts: list[str] = []

    def walk(node) -> None:
        tag = _tag(node)
        if tag in _SKIPPED:
            return
        if tag == "img":
            alt = (node.get("alt") or "").strip()
            if alt:
                parts.append(f" {alt} ")
        elif tag == "br":
            parts.append(BREAK if keep_breaks else " ")
        elif tag == "a" and (node.get("href") or "").startswith("#footnote-ref"):
            return
        elif node.text:
            parts.append(node.text)
        for child in node:
            walk(child)
            if child.tail:
                parts.append(child.tail)

    walk(element)
    text = "".join(parts)
    return text if keep_breaks else _collapse(text)


def _collapse(text: str) -> str:
    """Runs of whitespace as one space; line-break markers as newlines."""
    lines = (line.strip() for line in _SPACES.sub(" ", text).split(BREAK))
    return "\n".join(line for line in lines if line)


def _list_items(element, depth: int) -> list[str]:
    ordered = _tag(element) == "ol"
    items: list[str] = []
    number = 0
    for child in element:
        if _tag(child) != "li":
            continue
        number += 1
        nested = [n for n in child if _tag(n) in ("ul", "ol")]
        for sub in nested:
            child.remove(sub)
        text = _collapse(_inline_text(child, keep_breaks=True)).replace("\n", " ")
        marker = f"{number}." if ordered else "-"
        if text:
            items.append(f"{'  ' * depth}{marker} {text}")
        for sub in nested:
            items.extend(_list_items(sub, depth + 1))
    return items


def _table(element) -> str:
    rows = []
    for row in element.iter():
        if _tag(row) != "tr":
            continue
        cells = [
            _inline_text(cell).replace("|", "\\|")
            for cell in row
            if _tag(cell) in ("td", "th")
        ]
        if any(cells):
            rows.append(cells)
    return markdown_table(rows)


def markdown_table(rows: list[list[str]]) -> str:
    """Rows of cell texts as a Markdown table (the first row as its header); a
    "table" of single cells (a layout table) as plain lines."""
    rows = [row for row in rows if any(cell.strip() for cell in row)]
    if not rows:
        return ""
    width = max(len(row) for row in rows)
    if width == 1 or all(sum(bool(c.strip()) for c in row) <= 1 for row in rows):
        return "\n".join(
            next((c for c in row if c.strip()), "").strip() for row in rows
        )
    lines = []
    for index, row in enumerate(rows):
        padded = [cell.strip() for cell in row] + [""] * (width - len(row))
        lines.append("| " + " | ".join(padded) + " |")
        if index == 0:
            lines.append("|" + " --- |" * width)
    return "\n".join(lines)
