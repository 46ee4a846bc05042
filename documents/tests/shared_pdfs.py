"""Documents made of chosen pages of the shared PDFs, for tests of answers and
regions: the pages' text as PDFium reads it, chunked like ingestion, embedded
with the configured embedder, and each page's line boxes from PDFium's own
character boxes (documents/tests/pdf_lines.py).

Quicker than ingesting a 76-page booklet for the three pages a test asks about,
and the page numbers stay the real ones, so citations can be checked.
"""

import functools
from pathlib import Path

import pypdfium2 as pdfium
from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction
from langchain_text_splitters import RecursiveCharacterTextSplitter

from documents.ingestion import embeddings
from documents.models import Channel, Chunk, Document, Page
from documents.search.indexing import prepare_chunks
from documents.tests.pdf_lines import lines_for_page


def page_text(path: Path, number: int) -> str:
    """Page `number`'s text as stored: one newline style, lines trimmed."""
    document = pdfium.PdfDocument(str(path))
    try:
        raw = document[number - 1].get_textpage().get_text_range()
    finally:
        document.close()
    raw = raw.replace("\r\n", "\n").replace("\r", "\n").replace("\x02", "-")
    return "\n".join(" ".join(line.split()) for line in raw.split("\n")).strip()


@functools.cache
def _read(path: Path, numbers: tuple[int, ...], model: str, chunking: tuple) -> list:
    """(number, text, lines, [(chunk text, vector)]) per page; reading and
    embedding are done once per test run, whatever the number of tests."""
    embedder = embeddings.get_embedder()
    chunk_size, chunk_overlap = chunking
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=chunk_size, chunk_overlap=chunk_overlap, strip_whitespace=True
    )
    pages = []
    for number in numbers:
        text = page_text(path, number)
        pieces = splitter.split_text(text)
        vectors = embedder.embed_documents(pieces)
        pages.append(
            (
                number,
                text,
                lines_for_page(path, number, text),
                list(zip(pieces, vectors, strict=True)),
            )
        )
    return pages


def add_pdf_pages(
    channel: Channel, path: Path, numbers: list[int], *, title: str = ""
) -> Document:
    """A ready document of `channel` holding pages `numbers` of the PDF."""
    embedder = embeddings.get_embedder()
    read = _read(
        path,
        tuple(numbers),
        embedder.model_name,
        (settings.CHUNK_SIZE, settings.CHUNK_OVERLAP),
    )
    with transaction.atomic():
        document = Document(
            channel=channel,
            title=title or path.stem,
            original_filename=path.name,
            content_type="application/pdf",
            status=Document.Status.READY,
            page_count=max(numbers),
        )
        document.file.save(path.name, ContentFile(path.read_bytes()), save=False)
        document.save()
        chunks: list[Chunk] = []
        for number, text, lines, pieces in read:
            page = Page.objects.create(
                document=document, number=number, text=text, lines=lines
            )
            for piece, vector in pieces:
                chunks.append(
                    Chunk(
                        document=document,
                        page=page,
                        channel=channel,
                        page_number=number,
                        order=len(chunks),
                        text=piece,
                        embedding=vector,
                        embedding_model=embedder.model_name,
                    )
                )
        prepare_chunks(channel, chunks)
        Chunk.objects.bulk_create(chunks)
        document.chunk_count = len(chunks)
        document.save(update_fields=["chunk_count"])
    return document
