"""What a retrieved chunk is returned with, as SQL: read with a leg's ranking
(documents.search.legs.Preload) or on its own (documents.search.service)."""

from documents.models import Chunk, Document, MetadataField, Page

# Per chunk `c` joined to its document `d` (ROW_SOURCE): what a caller needs to
# cite it; the channel's fields shown with each chunk (all metadata when none
# is) as an array, the same on every row (PostgreSQL computes it once; its one
# parameter is the channel's id); whether its page has line positions (so its
# regions need the page).
ROW_COLUMNS = f"""
    c.document_id, d.title, d.original_filename, d.metadata, c.page_number,
    c.text, d.revision,
    ARRAY(
        SELECT f.name FROM {MetadataField._meta.db_table} f
        WHERE f.channel_id = %s AND f.sent_with_chunks
        ORDER BY f.position, f.id
    ),
    EXISTS(
        SELECT 1 FROM {Page._meta.db_table} p
        WHERE p.id = c.page_id AND p.lines <> '[]'::jsonb
    )
"""
ROW_SOURCE = (
    f"{Chunk._meta.db_table} c JOIN {Document._meta.db_table} d ON d.id = c.document_id"
)
