"""Markdown and plain-text files, read in the child like every other format.

The text is decoded (byte-order mark, declared charset, UTF-8, Windows-1252)
and cut into pages before clean-up (documents.ingestion.text.raw_pages); the
parent cleans and chunks each page as it arrives, so a large file is held to
the reader's time and memory limits and to the document's deadline and chunk
budget like a PDF is.
"""

from pathlib import Path

from documents.ingestion.parsed import UnreadableFile
from documents.ingestion.reader.protocol import Refusal, Request, emit, page_message
from documents.ingestion.text import markdown_title, raw_pages, text_of


def read_markdown(request: Request) -> None:
    _read_text(request, markdown=True)


def read_plain_text(request: Request) -> None:
    _read_text(request, markdown=False)


def _read_text(request: Request, *, markdown: bool) -> None:
    try:
        text = text_of(Path(request.path).read_bytes(), request.charset)
    except UnreadableFile as exc:
        raise Refusal("unreadable", exc.reason) from None
    emit(
        {
            "kind": "document",
            "title": "",
            "title_candidate": markdown_title(text) if markdown else "",
        }
    )
    pages = raw_pages(text, markdown=markdown, max_page_chars=request.text_page_chars)
    for number, page in enumerate(pages, start=1):
        emit(page_message(number, page, markdown=markdown, plain=not markdown))
    emit({"kind": "end", "notes": []})
