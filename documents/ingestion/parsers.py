"""Turning a stored file into pages.

Every format is read by the reader child (documents.ingestion.reader, run by
documents.ingestion.reading) under time and memory limits, with the reader the
format table names (documents.ingestion.formats). The content decides
the format when it can: a PDF stored as .html is read as a PDF, a DOCX named
.pptx as a DOCX, and a file that claims a binary format but holds something
else is refused saying so.
"""

from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

from django.conf import settings
from django.utils.http import parse_header_parameters

from documents.ingestion import formats
from documents.ingestion.cleaning import Vocabulary, clean_page
from documents.ingestion.deadline import Deadline, DeadlinePassed
from documents.ingestion.parsed import ParsedDocument, ParsedPage, UnreadableFile
from documents.ingestion.reader_child import CHILDREN, ReaderTimedOut
from documents.ingestion.reading import PDF_REASONS, ReaderLimits, read_in_child
from documents.ingestion.text import markdown_title, page_texts_of
from documents.ingestion.titles import choose_title, first_line_title


def start_reader() -> None:
    """Start the reader child ahead of the first file (a worker does at boot,
    as it loads the embedder), so the first document does not pay its start."""
    CHILDREN.prestart(settings.PDF_PARSE_MEMORY_MB)


def reader_limits(size: int) -> ReaderLimits:
    """The reader's limits for a file of `size` bytes, from settings."""
    image_budget = max(
        settings.PAGE_IMAGE_MIN_BUDGET_BYTES,
        int(size * settings.PAGE_IMAGE_BYTES_PER_INPUT_BYTE),
    )
    unpacked_budget = min(
        settings.UNPACKED_MAX_BYTES,
        max(
            settings.UNPACKED_MIN_BUDGET_BYTES,
            int(size * settings.UNPACKED_BYTES_PER_INPUT_BYTE),
        ),
    )
    return ReaderLimits(
        image_width=settings.PAGE_IMAGE_WIDTH,
        max_pages=settings.PDF_MAX_PAGES,
        timeout=settings.PDF_PARSE_TIMEOUT,
        memory_mb=settings.PDF_PARSE_MEMORY_MB,
        page_render_timeout=settings.PAGE_RENDER_TIMEOUT,
        image_budget_bytes=image_budget,
        unpacked_budget_bytes=unpacked_budget,
        ocr_enabled=settings.OCR_ENABLED,
        ocr_languages=settings.OCR_LANGUAGES,
        ocr_max_pages=settings.OCR_MAX_PAGES,
        ocr_page_timeout=settings.OCR_PAGE_TIMEOUT,
        text_page_chars=settings.TEXT_PAGE_MAX_CHARS,
        child_max_files=settings.READER_CHILD_MAX_FILES,
        child_max_bytes=settings.READER_CHILD_MAX_BYTES,
    )


def parse_file(
    path: Path,
    content_type: str,
    *,
    work_dir: Path,
    limits: ReaderLimits | None = None,
    on_pages: Callable[[list[ParsedPage]], None] | None = None,
    on_title: Callable[[str], None] | None = None,
    deadline: Deadline | None = None,
) -> ParsedDocument:
    """Pages of the file at `path`, page images written to `work_dir`, read
    by the reader child within `limits` (by default from settings, see
    reader_limits) and before `deadline`. `on_pages` is handed each page as soon
    as it is final, while the rest is still read; `on_title` is handed the
    document's own title (the ParsedDocument's) once, before the first page.

    Raises UnreadableFile with a reason a person understands (DeadlinePassed
    when the deadline ends the reading).
    """
    media_type, params = parse_header_parameters(content_type)
    media_type = effective_type(path, media_type)
    if media_type not in formats.BY_TYPE:
        raise UnreadableFile(f"Unsupported file type {content_type!r}.")
    limits = limits or reader_limits(path.stat().st_size)
    if deadline is not None:
        deadline.check()
        if deadline.left() < limits.timeout:
            limits = replace(
                limits,
                timeout=deadline.left(),
                timeout_setting="INGEST_DOCUMENT_TIMEOUT",
            )
    messages = read_in_child(
        path,
        media_type,
        work_dir=work_dir,
        limits=limits,
        charset=params.get("charset"),
    )
    try:
        return _document(
            messages, work_dir, limits.text_page_chars, on_pages, on_title, deadline
        )
    except ReaderTimedOut:
        if deadline is not None and limits.timeout_setting == "INGEST_DOCUMENT_TIMEOUT":
            raise DeadlinePassed(deadline.seconds) from None
        raise


def effective_type(path: Path, media_type: str) -> str:
    """The format the file's content shows, else the stored one; raises
    UnreadableFile for empty, encrypted, legacy and mislabelled files."""
    size = path.stat().st_size
    if size == 0:
        raise UnreadableFile("The file is empty (0 bytes).")
    try:
        with path.open("rb") as handle:
            sniffed = formats.sniff(handle)
            head = handle.read(formats.HEAD_BYTES)
    except formats.Refused as refused:
        raise UnreadableFile(refused.reason) from None
    name = formats.describe(media_type)
    fmt = formats.BY_TYPE.get(media_type)
    if sniffed.encrypted:
        what = formats.the(media_type) if fmt and fmt.is_office else "the Office file"
        raise UnreadableFile(
            f"{what[0].upper()}{what[1:]} is encrypted (password-protected). "
            "Remove the password and upload it again."
        )
    if sniffed.content_type:
        return sniffed.content_type
    if sniffed.zip_without_package:
        raise UnreadableFile(
            f"This is not {name}: it is a zip archive without the parts of an "
            "Office document or e-book."
        )
    if media_type == formats.PDF:
        raise UnreadableFile(PDF_REASONS["not_pdf"])
    if fmt is None:
        return media_type
    if fmt.package_parts:
        if head.startswith(b"PK"):
            the = formats.the(media_type)
            raise UnreadableFile(
                f"{the[0].upper()}{the[1:]} is corrupt or truncated: its zip "
                "structure can't be read (an incomplete upload or download?)."
            )
        what = "something else" if formats.looks_binary(head[:4096]) else "text"
        raise UnreadableFile(
            f"This file is named or sent as {name} but holds {what}, not {name}."
        )
    if fmt.magic:
        raise UnreadableFile(f"This is not {name} (its content is not one).")
    if media_type == formats.HTML and formats.looks_binary(head[:4096]):
        raise UnreadableFile("This is not an HTML file (it contains binary data).")
    return media_type


def _document(
    messages: Iterable[dict],
    work_dir: Path,
    max_page_chars: int,
    on_pages: Callable[[list[ParsedPage]], None] | None,
    on_title: Callable[[str], None] | None,
    deadline: Deadline | None,
) -> ParsedDocument:
    """Pages from the reader's messages, cleaned as they arrive: the words of
    the pages read so far decide whether a line-end hyphen is a real one."""
    vocabulary = Vocabulary()
    pages: list[ParsedPage] = []
    warnings: list[str] = []
    notes: list[str] = []
    facts: dict = {}
    first_heading = ""
    first_line = ""
    # The title is decided once, when the first page arrives: the chunks'
    # contexts (and so their embeddings) carry it from then on, so a later
    # heading must not make the final title differ from the one they carry.
    title = ""
    for message in messages:
        if deadline is not None:
            deadline.check()
        kind = message.get("kind")
        if kind == "document":
            facts = message
            continue
        if kind == "end":
            notes = list(message.get("notes", []))
            continue
        if kind == "image":
            warnings.extend(f"Page {message['number']}: {e}" for e in message["notes"])
            if message["image"] and 0 < message["number"] <= len(pages):
                page = pages[message["number"] - 1]
                page.image_path = work_dir / message["image"]
                page.width, page.height = message["width"], message["height"]
            continue
        warnings.extend(f"Page {message['number']}: {e}" for e in message["notes"])
        if message["markdown"] or message["plain"]:
            texts = page_texts_of(
                message["text"],
                markdown=message["markdown"],
                split=message["split"],
                max_page_chars=max_page_chars,
            )
            if message["split"]:  # a sheet's or a slide's heading is no title
                first_heading = first_heading or markdown_title(message["text"])
            if not pages:
                first_line = first_line_title(message["text"])
            new = [
                ParsedPage(
                    number=number,
                    text=text,
                    markdown=message["markdown"],
                    self_contained=message.get("self_contained", False),
                )
                for number, text in enumerate(texts or [""], start=len(pages) + 1)
            ]
        else:
            vocabulary.add(message["text"])
            text, lines = clean_page(
                message["text"], message["lines"], vocabulary=vocabulary
            )
            new = [
                ParsedPage(
                    number=len(pages) + 1,
                    text=text,
                    image_path=work_dir / message["image"]
                    if message["image"]
                    else None,
                    width=message["width"],
                    height=message["height"],
                    has_images=message["has_images"],
                    ocr=message["ocr"],
                    lines=lines,
                )
            ]
        if not pages:
            # What decides the title is known from the first page on.
            title = _title(facts, first_heading, first_line)
            if on_title:
                on_title(title)
        pages.extend(new)
        if on_pages:
            on_pages(new)
    if not pages:
        title = _title(facts, first_heading, first_line)
    return ParsedDocument(pages=pages, title=title, warnings=warnings, notes=notes)


def _title(facts: dict, first_heading: str, first_line: str) -> str:
    return choose_title(
        facts.get("title", ""),
        facts.get("title_candidate", "") or first_heading,
        first_line,
        producer=facts.get("producer", ""),
    )
