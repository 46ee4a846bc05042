"""HTML pages reduced to their main content with trafilatura.

Navigation, sidebars, footers, comment threads and other boilerplate are left
out; headings, paragraphs, lists, code and tables are kept as Markdown. The
page's own title comes from its metadata (<title>, Open Graph, ...). When the
extractor finds no main content (a page that is all navigation, say), the whole
body is taken instead.
"""

import re

from documents.ingestion.formats import html_encoding
from documents.ingestion.reader.markup import markdown_table, parse_html, to_markdown
from documents.ingestion.reader.protocol import Refusal, Request, emit, page_message

_TABLE_ROW = re.compile(r"^\|.*\|\s*$")
_TABLE_RULE = re.compile(r"^\|[\s|:-]*\|?\s*$")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_BOLD = re.compile(r"\*\*(\S(?:.*?\S)?)\*\*")
_ITALIC = re.compile(r"(?<![*\w])\*(\S(?:[^*]*?\S)?)\*(?![*\w])")
_INLINE_TAGS = re.compile(r"</?(?:sup|sub|u|mark|del|s|b|i|em|strong|small)>")
_ESCAPED = re.compile(r"\\([\[\]()*_#`~>!+.-])")
_EDIT_LINK = re.compile(r"\s*\[edit\]\s*$")
_RUNS = re.compile(r"[ \t]{2,}")
# lxml refuses a decoded string that still declares an encoding.
_XML_DECLARATION = re.compile(r"\A\ufeff?\s*<\?xml[^>]*\?>")


def read_html(request: Request) -> None:
    import trafilatura
    from trafilatura.utils import load_html

    with open(request.path, "rb") as handle:
        data: bytes | str = handle.read()
    if encoding := html_encoding(data, request.charset):
        # Decoded here: the extractor's own guess tries UTF-8 and then a
        # detector, which takes UTF-16 for binary data and misreads legacy
        # 8-bit pages that say what they are.
        data = _XML_DECLARATION.sub("", data.decode(encoding, errors="replace"), 1)
    tree = load_html(data)
    if tree is None:
        tree = parse_html(data)
    if tree is None:
        raise Refusal("empty", "The HTML file is empty.")
    text = trafilatura.extract(
        tree,
        output_format="markdown",
        include_tables=True,
        include_formatting=True,  # headings; emphasis is removed below
        include_links=False,
        include_images=False,
        include_comments=False,
        favor_recall=True,
    )
    if not text or not text.strip():
        body = tree.find("body")
        text = to_markdown(body if body is not None else tree)
    text = _tidy_tables(_plain(text or ""))
    if not text.strip():
        raise Refusal("empty", "The HTML file has no text.")
    try:
        metadata = trafilatura.extract_metadata(tree)
    except Exception:  # metadata is a nicety; the text is what matters
        metadata = None
    title = (metadata.title if metadata else "") or ""
    emit({"kind": "document", "title": title, "title_candidate": ""})
    emit(page_message(1, text, markdown=True, split=True))
    emit({"kind": "end", "notes": []})


def _plain(markdown: str) -> str:
    """The extractor's Markdown without emphasis, inline tags, backslash
    escapes or runs of spaces (code blocks keep their layout)."""
    out = []
    fenced = False
    for line in markdown.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append(line.strip())
            continue
        if fenced:
            out.append(line.rstrip())
            continue
        line = _INLINE_TAGS.sub("", line)
        line = _ITALIC.sub(r"\1", _BOLD.sub(r"\1", line))
        if not _TABLE_ROW.match(line):
            line = _ESCAPED.sub(r"\1", line)
        if line.startswith("#"):
            line = _EDIT_LINK.sub("", _ESCAPED.sub(r"\1", line))
        out.append(_RUNS.sub(" ", line).strip())
    return "\n".join(out)


def _tidy_tables(text: str) -> str:
    """Tables used for layout (one filled cell a row) read as plain lines."""
    out: list[str] = []
    rows: list[list[str]] = []

    def flush() -> None:
        if rows:
            out.append(markdown_table(rows))
            rows.clear()

    for line in text.split("\n"):
        if _TABLE_ROW.match(line):
            if not _TABLE_RULE.match(line):
                inner = line.strip()[1:-1]
                rows.append([cell.strip() for cell in _CELL_SPLIT.split(inner)])
            continue
        flush()
        out.append(line)
    flush()
    return "\n".join(out)
