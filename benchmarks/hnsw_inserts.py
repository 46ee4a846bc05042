"""What a chunk's insert costs in the HNSW index, per build setting.

    QUIRE_DATABASE_NAME=quire_bench .venv/bin/python benchmarks/hnsw_inserts.py

Copies the benchmark database's chunk vectors (make bench-scifact's) but the
last 1,000 into a scratch table, builds an HNSW index on it at each (m,
ef_construction), times the build, then inserts the 1,000 one statement at a
time, as ingestion's replace-rows transaction does. Prints seconds; drops the
scratch table.
"""

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
os.environ.setdefault("QUIRE_DATABASE_NAME", "quire_bench")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402

from documents.models import Chunk  # noqa: E402

SETTINGS = ((16, 64), (32, 128), (32, 64))
INSERTS = 1000


def main() -> None:
    table = Chunk._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {table} WHERE embedding IS NOT NULL")
        total = cursor.fetchone()[0]
        kept = total - INSERTS
        if kept < INSERTS:
            sys.exit("the database needs more chunks: run make bench-scifact first")
        cursor.execute(
            f"SELECT id, embedding FROM {table} WHERE embedding IS NOT NULL "
            "ORDER BY id OFFSET %s",
            [kept],
        )
        rows = cursor.fetchall()
        for m, ef_construction in SETTINGS:
            cursor.execute("DROP TABLE IF EXISTS hnsw_insert_scratch")
            cursor.execute(
                "CREATE TABLE hnsw_insert_scratch AS SELECT id, embedding "
                f"FROM {table} WHERE embedding IS NOT NULL ORDER BY id LIMIT %s",
                [kept],
            )
            started = time.perf_counter()
            cursor.execute(
                "CREATE INDEX ON hnsw_insert_scratch USING hnsw "
                f"(embedding vector_cosine_ops) WITH (m = {m}, "
                f"ef_construction = {ef_construction})"
            )
            build = time.perf_counter() - started
            started = time.perf_counter()
            for row in rows:
                cursor.execute("INSERT INTO hnsw_insert_scratch VALUES (%s, %s)", row)
            each = (time.perf_counter() - started) / len(rows) * 1000
            print(
                f"m {m} ef_construction {ef_construction}: build {build:.1f} s over "
                f"{kept} vectors; {len(rows)} inserts {each:.2f} ms each",
                flush=True,
            )
        cursor.execute("DROP TABLE hnsw_insert_scratch")


if __name__ == "__main__":
    main()
