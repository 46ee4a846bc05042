"""Chunk.context (a chunk's title and heading path), found by the keyword index.

Chunks made before keep an empty context and are indexed as before; the
generated search vector is dropped and added again over both columns (PostgreSQL
computes it for the existing rows), which needs no re-embedding. `manage.py
reingest` gives old chunks their context.
"""

import django.contrib.postgres.indexes
import django.contrib.postgres.search
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("documents", "0019_worker_heartbeats"),
    ]

    operations = [
        migrations.AddField(
            model_name="chunk",
            name="context",
            field=models.TextField(blank=True, default="", db_default=""),
        ),
        migrations.RemoveIndex(
            model_name="chunk",
            name="chunk_search_vector_gin",
        ),
        migrations.RemoveField(
            model_name="chunk",
            name="search_vector",
        ),
        migrations.AddField(
            model_name="chunk",
            name="search_vector",
            field=models.GeneratedField(
                db_persist=True,
                expression=django.contrib.postgres.search.SearchVector(
                    "context", "text", config="english"
                ),
                output_field=django.contrib.postgres.search.SearchVectorField(),
            ),
        ),
        migrations.AddIndex(
            model_name="chunk",
            index=django.contrib.postgres.indexes.GinIndex(
                fields=["search_vector"], name="chunk_search_vector_gin"
            ),
        ),
    ]
