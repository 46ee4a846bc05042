"""Keep Chunk.embedding and Chunk.terms inside the table row.

pgvector types default to EXTERNAL storage, so once a row passes the 2 kB TOAST
threshold (text, search_vector, terms and a 384-dim embedding do) every distance
or inner product in a scan first fetches the value from the TOAST table. PLAIN
makes PostgreSQL move the text and tsvector out instead; exact vector scans and
BM25 scoring then read one heap page per row.
"""

from django.db import migrations

TABLE = "documents_chunk"


class Migration(migrations.Migration):
    dependencies = [("documents", "0003_keyword_statistics")]

    operations = [
        migrations.RunSQL(
            sql=[
                f"ALTER TABLE {TABLE} ALTER COLUMN embedding SET STORAGE PLAIN",
                f"ALTER TABLE {TABLE} ALTER COLUMN terms SET STORAGE PLAIN",
            ],
            reverse_sql=[
                f"ALTER TABLE {TABLE} ALTER COLUMN embedding SET STORAGE EXTERNAL",
                f"ALTER TABLE {TABLE} ALTER COLUMN terms SET STORAGE EXTERNAL",
            ],
        )
    ]
