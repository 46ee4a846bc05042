"""The HNSW index at m 32 / ef_construction 128 (was 16 / 64).

Walks on the m 16 graph settled in a neighbouring cluster for some queries
(recall@50 0.973 against 0.987 at m 32 on a 100k copy, issue 26); the denser
graph costs about twice the index per chunk and a longer build
(docs/scaling.md). Rebuilding it scans every chunk: on a large channel set
maintenance_work_mem near the index's size first.
"""

import pgvector.django.indexes
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('documents', '0020_chunk_context'),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name='chunk',
            name='chunk_embedding_hnsw',
        ),
        migrations.AddIndex(
            model_name='chunk',
            index=pgvector.django.indexes.HnswIndex(ef_construction=128, fields=['embedding'], m=32, name='chunk_embedding_hnsw', opclasses=['vector_cosine_ops']),
        ),
    ]
