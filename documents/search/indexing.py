"""Keyword-index hooks that ingestion calls inside its replacement transaction.

Contract (used by documents.services.documents):
- prepare_chunks(channel, chunks): called with the new, unsaved Chunk objects
  before they are bulk-created; sets Chunk.terms / Chunk.term_count and may write
  term statistics in the same transaction.
- forget_chunks(channel, document_id): called before a document's old chunks are
  deleted (re-ingestion or deletion), in the same transaction.
"""

from documents.search.terms import chunk_term_vector


def prepare_chunks(channel, chunks) -> None:
    for chunk in chunks:
        chunk.terms, chunk.term_count = chunk_term_vector(chunk.text)


def forget_chunks(channel, document_id: int) -> None:
    return None
