"""The HNSW index at m 32 / ef_construction 128 (was 16 / 64).

Walks on the m 16 graph settled in a neighbouring cluster for some queries
(recall@50 0.973 against 0.987 at m 32 on a 100k copy; under 5% and ~50%
filters 0.913 -> 0.965 and 0.643 -> 0.921 at 400k rows, issue 26). The index
is about the same size; the build is longer (docs/scaling.md). Built
concurrently, so that ingestion and searches go on meanwhile (searches rank
exactly until the new graph is there); on a large channel set raise
maintenance_work_mem near the index's size first.
"""

import pgvector.django.indexes
from django.contrib.postgres.operations import (
    AddIndexConcurrently,
    RemoveIndexConcurrently,
)
from django.db import migrations


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("documents", "0020_chunk_context"),
    ]

    operations = [
        RemoveIndexConcurrently(
            model_name="chunk",
            name="chunk_embedding_hnsw",
        ),
        AddIndexConcurrently(
            model_name="chunk",
            index=pgvector.django.indexes.HnswIndex(
                ef_construction=128,
                fields=["embedding"],
                m=32,
                name="chunk_embedding_hnsw",
                opclasses=["vector_cosine_ops"],
            ),
        ),
    ]
