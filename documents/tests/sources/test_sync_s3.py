"""Syncing an S3 bucket into a channel, against moto's S3 server on 127.0.0.1
(boto3 over HTTP): each test syncs, changes the bucket (add, modify, delete,
rename, user metadata, sidecar), syncs again and checks the channel's
documents, revisions, audit rows and the sync's counts."""

from __future__ import annotations

import json
import time

import pytest

from documents.models import Document, DocumentRevision, SourceSync
from documents.tests.syncing import add_source, audited, by_key, counts, sync

pytestmark = pytest.mark.django_db

Status = SourceSync.Status
FIELDS = [
    {"name": "product", "type": "string"},
    {"name": "year", "type": "number"},
]


def put(client, bucket: str, key: str, body: bytes, **metadata: str) -> None:
    client.put_object(Bucket=bucket, Key=key, Body=body, Metadata=metadata)


def next_second() -> None:
    """LastModified has whole seconds: an in-place rewrite must land in a
    later second than the write it replaces to be told apart."""
    time.sleep(1.05 - time.time() % 1)


def test_a_bucket_syncs_adds_revises_renames_edits_metadata_and_removes(
    make_channel, store, moto_server
):
    bucket, client = store
    channel = make_channel(fields=FIELDS)
    put(client, bucket, "docs/pump.txt", b"The pump manual, revision one.", model="P-1")
    put(client, bucket, "docs/valve.txt", b"Valves are closed by hand.")
    put(client, bucket, "docs/valve.txt.meta.json", json.dumps({"year": 2024}).encode())
    put(client, bucket, "docs/seal.txt", b"Seals are replaced yearly.", model="S-1")
    put(client, bucket, "docs/old.txt", b"An old note that will be renamed.")
    put(client, bucket, "docs/gone.txt", b"A note that will be deleted.")
    put(client, bucket, "elsewhere/other.txt", b"Not under the prefix.")
    source = add_source(
        channel,
        "s3",
        {"store": "archive", "bucket": bucket, "prefix": "docs/"},
        metadata_map={"product": "model"},
        delete_removed=True,
    )

    first = sync(source)
    assert first.status == Status.DONE, first.reason
    assert counts(first) == (5, 0, 0, 0, 0), first.errors
    assert (first.listed, first.processed, first.kept) == (5, 5, 0)
    documents = by_key(source)
    assert set(documents) == {
        "pump.txt",
        "valve.txt",
        "seal.txt",
        "old.txt",
        "gone.txt",
    }
    assert documents["pump.txt"].metadata == {"product": "P-1"}
    assert documents["valve.txt"].metadata == {"year": 2024}
    assert documents["pump.txt"].original_filename == "pump.txt"
    assert documents["pump.txt"].source_url == ""
    assert audited("document.upload") == 5
    assert audited("source.sync") == 1

    again = sync(source)
    assert counts(again) == (0, 0, 5, 0, 0)

    next_second()
    put(client, bucket, "docs/pump.txt", b"The pump manual, revision two.", model="P-1")
    put(client, bucket, "docs/new.txt", b"A new document about gaskets.")
    client.delete_object(Bucket=bucket, Key="docs/gone.txt")
    client.copy_object(
        Bucket=bucket, Key="docs/renamed.txt", CopySource=f"{bucket}/docs/old.txt"
    )
    client.delete_object(Bucket=bucket, Key="docs/old.txt")
    # Only metadata: a new sidecar, and user metadata rewritten in place.
    put(client, bucket, "docs/valve.txt.meta.json", json.dumps({"year": 2025}).encode())
    client.copy_object(
        Bucket=bucket,
        Key="docs/seal.txt",
        CopySource=f"{bucket}/docs/seal.txt",
        Metadata={"model": "S-2"},
        MetadataDirective="REPLACE",
    )

    before = len(moto_server.object_reads(bucket))
    third = sync(source)
    assert third.status == Status.DONE, third.reason
    # A metadata-only change is applied without downloading the object.
    read = moto_server.object_reads(bucket)[before:]
    assert sorted(read) == sorted(
        f"/{bucket}/docs/{name}"
        for name in ("pump.txt", "new.txt", "renamed.txt", "valve.txt.meta.json")
    )
    # new added; pump (file), renamed, valve and seal (metadata) revised;
    # gone removed.
    assert counts(third) == (1, 4, 0, 1, 0), third.errors
    after = by_key(source)
    assert set(after) == {"pump.txt", "valve.txt", "seal.txt", "renamed.txt", "new.txt"}
    assert after["pump.txt"].pk == documents["pump.txt"].pk
    assert after["renamed.txt"].pk == documents["old.txt"].pk
    assert after["valve.txt"].metadata == {"year": 2025}
    assert after["seal.txt"].metadata == {"product": "S-2"}
    assert not Document.objects.filter(pk=documents["gone.txt"].pk).exists()

    def numbers(key: str) -> list[int]:
        revisions = DocumentRevision.objects.filter(document=after[key])
        return list(revisions.order_by("number").values_list("number", flat=True))

    assert numbers("pump.txt") == [1, 2]
    assert numbers("renamed.txt") == numbers("valve.txt") == numbers("seal.txt") == [1]
    assert audited("document.revise", after["pump.txt"]) == 1
    assert audited("document.revise") == 1
    assert audited("document.edit", after["valve.txt"]) == 1
    assert audited("document.edit", after["seal.txt"]) == 1
    assert audited("document.delete") == 1
    assert audited("document.upload") == 6
    assert audited("source.sync") == 3

    last = sync(source)
    assert counts(last) == (0, 0, 5, 0, 0)


def test_an_unchanged_sync_of_many_objects_downloads_nothing(
    make_channel, store, moto_server
):
    """The second sync of a bucket where nothing changed lists it and opens
    no object: no GET (nor HEAD) of an object reaches the S3 server."""
    bucket, client = store
    channel = make_channel()
    total = 80
    for n in range(total):
        put(client, bucket, f"n{n:04}.txt", f"Note number {n} of the archive.".encode())
    source = add_source(channel, "s3", {"store": "archive", "bucket": bucket})
    first = sync(source)
    assert counts(first) == (total, 0, 0, 0, 0), first.errors
    assert len(moto_server.object_reads(bucket)) == total

    before = len(moto_server.requests)
    second = sync(source)
    assert counts(second) == (0, 0, total, 0, 0)
    during = moto_server.requests[before:]
    assert during, "the listing reached the server"
    assert {method for method, _, _ in during} == {"GET"}
    assert all("list-type=2" in query for _, _, query in during), during


def test_object_key_folders_map_to_fields_as_a_folders_do(make_channel, store):
    """`path:N` names the Nth folder of the key below the prefix, for a
    bucket as for a folder."""
    bucket, client = store
    channel = make_channel(
        fields=[
            {"name": "product", "type": "string"},
            {"name": "year", "type": "number"},
        ]
    )
    put(client, bucket, "manuals/pumps/2024/p100.txt", b"The P100 pump manual.")
    source = add_source(
        channel,
        "s3",
        {"store": "archive", "bucket": bucket, "prefix": "manuals/"},
        metadata_map={"product": "path:0", "year": "path:1"},
    )
    row = sync(source)
    assert counts(row) == (1, 0, 0, 0, 0), row.errors
    (document,) = by_key(source).values()
    assert document.source_key == "pumps/2024/p100.txt"
    assert document.metadata == {"product": "pumps", "year": 2024}
