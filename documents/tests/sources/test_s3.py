"""The S3 source against moto's S3 server on 127.0.0.1, with boto3 talking to
it over HTTP: listings see added, modified, removed, renamed objects and
metadata changes; stores are picked by name; a bucket that vanishes
mid-listing cuts the listing short."""

from __future__ import annotations

import json
import time

import pytest

from documents.sources.base import (
    Entry,
    EntryGone,
    EntryTooLarge,
    SourceConfigError,
    SourceError,
)
from documents.sources.registry import build_source
from documents.sources.s3 import S3Source
from documents.tests.sources.servers import free_port


def listing(source: S3Source, known=None) -> dict[str, Entry]:
    found = {}
    for item in source.list(known):
        assert isinstance(item, Entry), item
        found[item.key] = item
    return found


def put(client, bucket: str, key: str, body: bytes, **metadata: str) -> None:
    client.put_object(Bucket=bucket, Key=key, Body=body, Metadata=metadata)


def test_listings_follow_adds_changes_removals_renames_and_metadata(store):
    """Keys are object keys under the prefix; the version moves with the
    content and with an in-place metadata change; the object's user metadata
    and its sidecar are the entry's metadata, even when a key sorting between
    them puts the sidecar on the next page; other prefixes are not listed."""
    bucket, client = store
    put(client, bucket, "docs/pump.txt", b"Pump r1", model="P-1")
    put(client, bucket, "docs/valve.txt", b"Valve")
    put(client, bucket, "docs/valve.txt.meta.json", json.dumps({"year": 2025}).encode())
    put(
        client, bucket, "docs/valve.txt-old", b"sorts between valve.txt and its sidecar"
    )
    put(client, bucket, "other/ignored.txt", b"no")
    source = build_source(
        "s3", {"store": "archive", "bucket": bucket, "prefix": "docs/"}
    )
    source.page_size = 2
    first = listing(source)
    assert set(first) == {"pump.txt", "valve.txt", "valve.txt-old"}
    assert first["valve.txt-old"].metadata == {"path_segments": []}
    assert first["pump.txt"].metadata == {"path_segments": [], "model": "P-1"}
    assert first["valve.txt"].metadata == {"path_segments": [], "year": 2025}
    assert first["pump.txt"].size == 7
    assert source.open(first["pump.txt"]).read() == b"Pump r1"

    put(client, bucket, "docs/pump.txt", b"Pump r2", model="P-1")
    put(client, bucket, "docs/new.txt", b"New")
    client.copy_object(
        Bucket=bucket, Key="docs/valve-v2.txt", CopySource=f"{bucket}/docs/valve.txt"
    )
    client.delete_object(Bucket=bucket, Key="docs/valve.txt")
    client.delete_object(Bucket=bucket, Key="docs/valve.txt-old")
    second = listing(source)
    assert set(second) == {"pump.txt", "new.txt", "valve-v2.txt"}
    assert second["pump.txt"].version != first["pump.txt"].version

    # LastModified has whole seconds: the in-place rewrite must land in a later
    # second than the write it replaces to be told apart.
    time.sleep(1.05 - time.time() % 1)
    client.copy_object(
        Bucket=bucket,
        Key="docs/new.txt",
        CopySource=f"{bucket}/docs/new.txt",
        Metadata={"model": "N-1"},
        MetadataDirective="REPLACE",
    )
    third = listing(source)
    assert third["new.txt"].version != second["new.txt"].version
    assert third["new.txt"].metadata == {"path_segments": [], "model": "N-1"}


def test_a_listing_with_versions_known_asks_nothing_per_object(store):
    """With every version known, a paginated listing makes list requests
    only (no HEAD per object) and yields the same keys and versions."""
    bucket, client = store
    for n in range(25):
        put(client, bucket, f"f{n:02}.txt", b"x", n=str(n))
    source = build_source("s3", {"store": "archive", "bucket": bucket})
    source.page_size = 10
    first = listing(source)
    calls: list[str] = []
    source.client.meta.events.register(
        "before-call.s3", lambda model, **_: calls.append(model.name)
    )
    second = listing(source, {k: e.version for k, e in first.items()})
    assert {k: e.version for k, e in second.items()} == {
        k: e.version for k, e in first.items()
    }
    assert calls == ["ListObjectsV2"] * 3


def test_stores_are_picked_by_name_and_buckets_can_be_restricted(store, settings):
    """A configuration naming an undeclared store, or a bucket the store does
    not allow, is refused; it never carries an endpoint or a key."""
    bucket, _ = store
    with pytest.raises(SourceConfigError, match="not a store the operator declared"):
        build_source("s3", {"store": "https://evil.example", "bucket": bucket})
    settings.SOURCE_S3_STORES["archive"]["buckets"] = ["only-this"]
    with pytest.raises(SourceConfigError, match="allows the buckets only-this"):
        build_source("s3", {"store": "archive", "bucket": bucket})


def test_opening_is_bounded_and_knows_removed_entries(store):
    """An object over max_bytes is refused; one removed since the listing is
    EntryGone; one replaced since is refused rather than read as the old."""
    bucket, client = store
    put(client, bucket, "big.bin", b"x" * 101)
    put(client, bucket, "small.txt", b"small")
    source = build_source("s3", {"store": "archive", "bucket": bucket}, max_bytes=100)
    found = listing(source)
    with pytest.raises(EntryTooLarge):
        source.open(found["big.bin"])
    put(client, bucket, "small.txt", b"changed")
    with pytest.raises(SourceError, match="changed since the listing"):
        source.open(found["small.txt"])
    client.delete_object(Bucket=bucket, Key="small.txt")
    with pytest.raises(EntryGone):
        source.open(found["small.txt"])


def test_a_bucket_that_disappears_mid_listing_cuts_the_listing_short(store):
    """Deleting the bucket between two pages of the listing ends it with
    SourceError naming the bucket, not with a shorter listing."""
    bucket, client = store
    for n in range(30):
        put(client, bucket, f"f{n:02}.txt", b"x")
    source = build_source("s3", {"store": "archive", "bucket": bucket})
    source.page_size = 10
    items = source.list()
    next(items)
    for n in range(30):
        client.delete_object(Bucket=bucket, Key=f"f{n:02}.txt")
    client.delete_bucket(Bucket=bucket)
    with pytest.raises(
        SourceError, match="no longer exists; the listing .* was cut short"
    ):
        list(items)


def test_an_unreachable_store_is_a_reason(settings, monkeypatch):
    """A store whose endpoint does not answer fails the listing with a reason."""
    monkeypatch.setenv("K", "k")
    settings.SOURCE_S3_STORES = {
        "gone": {
            "endpoint_url": f"http://127.0.0.1:{free_port()}",
            "region": "us-east-1",
            "access_key_env": "K",
            "secret_key_env": "K",
            "session_token_env": "",
            "addressing_style": "path",
            "buckets": [],
            "timeout": 2.0,
        }
    }
    source = build_source("s3", {"store": "gone", "bucket": "b"})
    with pytest.raises(SourceError, match="could not be reached while listing"):
        list(source.list())
