"""A corpus written straight into the tables, for tests and benchmarks of
retrieval (the real path is documents.services.ingestion.ingest_document)."""

from django.core.files.base import ContentFile
from django.db import transaction

from documents.ingestion import embeddings
from documents.ingestion.context import retrieval_text
from documents.models import Channel, Chunk, Document, Page, Source
from documents.search.indexing import prepare_chunks


def add_document(
    channel: Channel,
    *,
    title: str = "",
    pages: list[str | list[str]],
    metadata: dict | None = None,
    status: str = Document.Status.READY,
) -> Document:
    """A document whose pages are given as text (or as a list of chunk texts),
    one chunk per paragraph, embedded with the configured embedder."""
    embedder = embeddings.get_embedder()
    with transaction.atomic():
        document = Document(
            channel=channel,
            title=title,
            original_filename=f"{title or 'document'}.txt",
            content_type="text/plain",
            metadata=metadata or {},
            status=status,
            page_count=len(pages),
        )
        body = "\n\n".join(p if isinstance(p, str) else "\n\n".join(p) for p in pages)
        document.file.save(document.original_filename, ContentFile(body), save=False)
        document.save()
        chunks: list[Chunk] = []
        for number, page in enumerate(pages, start=1):
            texts = page if isinstance(page, list) else [page]
            page_row = Page.objects.create(
                document=document, number=number, text="\n\n".join(texts)
            )
            for text in texts:
                chunks.append(
                    Chunk(
                        document=document,
                        page=page_row,
                        channel=channel,
                        page_number=number,
                        order=len(chunks),
                        text=text,
                        embedding_model=embedder.model_name,
                    )
                )
        vectors = embedder.embed_documents([chunk.text for chunk in chunks])
        for chunk, vector in zip(chunks, vectors, strict=True):
            chunk.embedding = vector
        prepare_chunks(channel, chunks)
        Chunk.objects.bulk_create(chunks)
        document.chunk_count = len(chunks)
        document.save(update_fields=["chunk_count"])
    return document


def add_documents(
    channel: Channel,
    items: list[dict],
    *,
    batch_size: int = 256,
    progress=None,
) -> None:
    """Bulk version of add_document for benchmarks: each item has "title",
    "filename", "text" (one page, chunked like ingestion) and optional
    "metadata"."""
    from django.conf import settings

    from documents.ingestion.chunking import chunk_pages
    from documents.ingestion.parsed import ParsedPage

    embedder = embeddings.get_embedder()
    for start in range(0, len(items), batch_size):
        batch = items[start : start + batch_size]
        with transaction.atomic():
            documents = Document.objects.bulk_create(
                [
                    Document(
                        channel=channel,
                        title=item["title"],
                        file=f"channels/{channel.pk}/originals/{item['filename']}",
                        original_filename=item["filename"],
                        content_type="text/plain",
                        size=len(item["text"].encode()),
                        metadata=item.get("metadata") or {},
                        status=Document.Status.READY,
                        page_count=1,
                    )
                    for item in batch
                ]
            )
            pages = Page.objects.bulk_create(
                [
                    Page(document=document, number=1, text=item["text"])
                    for document, item in zip(documents, batch, strict=True)
                ]
            )
            chunks: list[Chunk] = []
            for document, page, item in zip(documents, pages, batch, strict=True):
                pieces = chunk_pages(
                    [ParsedPage(number=1, text=item["text"])],
                    chunk_size=settings.CHUNK_SIZE,
                    chunk_overlap=settings.CHUNK_OVERLAP,
                    title=item["title"],
                )
                document.chunk_count = len(pieces)
                for piece in pieces:
                    chunks.append(
                        Chunk(
                            document=document,
                            page=page,
                            channel=channel,
                            page_number=1,
                            order=piece.order,
                            text=piece.text,
                            context=piece.context,
                            embedding_model=embedder.model_name,
                        )
                    )
            vectors = embedder.embed_documents(
                [retrieval_text(chunk.context, chunk.text) for chunk in chunks]
            )
            for chunk, vector in zip(chunks, vectors, strict=True):
                chunk.embedding = vector
            prepare_chunks(channel, chunks)
            Chunk.objects.bulk_create(chunks)
            Document.objects.bulk_update(documents, ["chunk_count"])
        if progress:
            progress(start + len(batch))


def mark_synced(
    document: Document,
    *,
    source_name: str = "Handbook site",
    key: str,
    url: str = "",
) -> Document:
    """`document` as a sync of a web source of its channel leaves it: its
    source, its key there and (for a web page) its public URL."""
    source, _ = Source.objects.get_or_create(
        channel=document.channel,
        name=source_name,
        defaults={"kind": Source.Kind.WEB, "config": {"url": url or "https://x/"}},
    )
    document.source = source
    document.source_key = key
    document.source_version = "etag-1"
    document.source_url = url
    document.save(
        update_fields=["source", "source_key", "source_version", "source_url"]
    )
    return document
