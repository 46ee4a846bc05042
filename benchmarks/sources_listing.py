"""Listing an S3 source: entries/s for a 1,000-object bucket on moto's S3
server (HTTP on 127.0.0.1), listed twice by ``documents.sources.s3.S3Source``.

    .venv/bin/python benchmarks/sources_listing.py [--objects 1000]

The first listing knows no versions, so it asks each object for its user
metadata (one HEAD each); the second passes the versions it got, as a sync
that finds nothing changed does, and needs only the paginated list requests.
The bare paginator (boto3's list_objects_v2, what a script would call) is the
floor both are compared with. moto is slower than a real store per request,
so the ratios say more than the absolute figures.
"""

import argparse
import logging
import socket
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import boto3
from moto.server import ThreadedMotoServer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from documents.sources.s3 import S3Source  # noqa: E402

BUCKET = "bench-sources"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def timed(label: str, count: int, run) -> float:
    started = time.perf_counter()
    result = run()
    seconds = time.perf_counter() - started
    assert result == count, (label, result, count)
    print(f"{label:<44} {count:>6} entries {seconds:7.2f} s {count / seconds:9.0f} /s")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=1000)
    args = parser.parse_args()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        client = boto3.client(
            "s3",
            endpoint_url=f"http://127.0.0.1:{port}",
            region_name="us-east-1",
            aws_access_key_id="bench",
            aws_secret_access_key="bench",
        )
        client.create_bucket(Bucket=BUCKET)
        with ThreadPoolExecutor(8) as pool:
            list(
                pool.map(
                    lambda n: client.put_object(
                        Bucket=BUCKET,
                        Key=f"docs/{n:05}.txt",
                        Body=f"document {n}".encode(),
                        Metadata={"number": str(n)},
                    ),
                    range(args.objects),
                )
            )
        source = S3Source(
            client=client,
            store_name="bench",
            bucket=BUCKET,
            prefix="docs/",
            max_bytes=1024 * 1024,
        )

        def bare() -> int:
            pages = client.get_paginator("list_objects_v2").paginate(
                Bucket=BUCKET, Prefix="docs/"
            )
            return sum(len(page.get("Contents", ())) for page in pages)

        versions: dict[str, str] = {}

        def first() -> int:
            for entry in source.list():
                versions[entry.key] = entry.version
            return len(versions)

        def second() -> int:
            return sum(1 for _ in source.list(versions))

        print(f"S3 source listing, {args.objects} objects on moto (HTTP, 127.0.0.1)")
        timed("bare list_objects_v2 paginator", args.objects, bare)
        timed("S3Source.list(), versions unknown (HEADs)", args.objects, first)
        timed("S3Source.list(known), nothing changed", args.objects, second)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
