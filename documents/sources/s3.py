"""An S3-compatible bucket and prefix, reached through a store the operator
declares (``SOURCE_S3_STORES``: endpoint, region and the names of the
environment variables holding the keys); a configuration picks a store by name
and never carries a key or an endpoint."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import IO, Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from django.conf import settings

from documents.sources.base import (
    SIDECAR_MAX_BYTES,
    SIDECAR_SUFFIX,
    BoundedReader,
    Entry,
    EntryGone,
    EntryTooLarge,
    Skipped,
    Source,
    SourceConfigError,
    SourceError,
    parse_sidecar,
    too_large,
)

MISSING_BUCKET = {"NoSuchBucket", "404"}
MISSING_KEY = {"NoSuchKey", "404"}
CHANGED = {"PreconditionFailed", "412"}


def s3_client(store: Mapping[str, Any]) -> Any:
    """A boto3 client for one declared store; the keys are read from the
    variables the store names, when the client is made."""
    return boto3.session.Session().client(
        "s3",
        endpoint_url=store["endpoint_url"] or None,
        region_name=store["region"] or None,
        aws_access_key_id=os.environ.get(store["access_key_env"]) or None,
        aws_secret_access_key=os.environ.get(store["secret_key_env"]) or None,
        aws_session_token=(
            os.environ.get(store["session_token_env"]) or None
            if store["session_token_env"]
            else None
        ),
        config=Config(
            connect_timeout=store["timeout"],
            read_timeout=store["timeout"],
            retries={"max_attempts": 3, "mode": "standard"},
            s3={"addressing_style": store["addressing_style"]},
        ),
    )


class S3Source(Source):
    """Objects under a prefix; key = the object key below the prefix, version =
    ETag and LastModified (a metadata-only change rewrites the object in place,
    which keeps the ETag but not the time), metadata = the object's user
    metadata, then its ``<key>.meta.json`` sidecar if there is one."""

    kind = "s3"
    # Keys per ListObjectsV2 request (S3's maximum).
    page_size: int = 1000

    def __init__(
        self,
        *,
        client: Any,
        store_name: str,
        bucket: str,
        prefix: str,
        max_bytes: int,
        page_size: int | None = None,
    ) -> None:
        self.client = client
        self.store_name = store_name
        self.bucket = bucket
        self.prefix = prefix
        self.max_bytes = max_bytes
        self.page_size = page_size or self.page_size

    @classmethod
    def from_config(cls, config: Mapping[str, Any], *, max_bytes: int) -> S3Source:
        stores = settings.SOURCE_S3_STORES
        name = config.get("store")
        if name not in stores:
            declared = ", ".join(sorted(stores)) or "none are declared"
            raise SourceConfigError(
                f"{name!r} is not a store the operator declared in "
                f"SOURCE_S3_STORES ({declared})."
            )
        store = stores[name]
        bucket = config.get("bucket")
        if not isinstance(bucket, str) or not bucket:
            raise SourceConfigError("An S3 source needs a bucket.")
        if store["buckets"] and bucket not in store["buckets"]:
            raise SourceConfigError(
                f"The store {name!r} allows the buckets "
                f"{', '.join(store['buckets'])}, not {bucket!r}."
            )
        prefix = config.get("prefix") or ""
        if not isinstance(prefix, str):
            raise SourceConfigError("An S3 prefix is a string.")
        return cls(
            client=s3_client(store),
            store_name=name,
            bucket=bucket,
            prefix=prefix,
            max_bytes=max_bytes,
        )

    @classmethod
    def config_for(cls, location: str, **options: Any) -> dict[str, Any]:
        """``bucket/prefix`` (or ``s3://bucket/prefix``) in the store
        ``options["store"]``, by default the only store declared."""
        store = options.get("store") or ""
        if not store and len(settings.SOURCE_S3_STORES) == 1:
            (store,) = settings.SOURCE_S3_STORES
        bucket, _, prefix = location.strip().removeprefix("s3://").partition("/")
        return {"store": store, "bucket": bucket, "prefix": prefix}

    @staticmethod
    def location_of(config: Mapping[str, Any]) -> str:
        return f"s3://{config.get('bucket', '')}/{config.get('prefix', '')}"

    def list(self, known: Mapping[str, str] | None = None) -> Iterator[Entry | Skipped]:
        known = known or {}
        # Keys arrive in lexicographic order and "k" < "k.meta.json", but other
        # keys may sort between them: an object waits until its sidecar's name
        # has been passed before it is yielded.
        pending: dict[str, dict[str, Any]] = {}
        sidecars: dict[str, dict[str, Any]] = {}
        paginator = self.client.get_paginator("list_objects_v2")
        pages = paginator.paginate(
            Bucket=self.bucket,
            Prefix=self.prefix,
            PaginationConfig={"PageSize": self.page_size},
        )
        try:
            for page in pages:
                last = ""
                for obj in page.get("Contents", ()):
                    last = obj["Key"]
                    if last.endswith("/"):
                        continue
                    if last.endswith(SIDECAR_SUFFIX):
                        sidecars[last] = obj
                    else:
                        pending[last] = obj
                for key in [k for k in pending if k + SIDECAR_SUFFIX <= last]:
                    yield self._entry(pending.pop(key), sidecars, known)
            for key in list(pending):
                yield self._entry(pending.pop(key), sidecars, known)
        except (ClientError, BotoCoreError) as exc:
            raise SourceError(self._reason(exc, "listing")) from None

    def same_content(self, old_version: str, new_version: str) -> bool:
        """The same ETag: the same bytes (the time and sidecar moved)."""
        old_etag, old_sep, _ = old_version.partition("@")
        new_etag, new_sep, _ = new_version.partition("@")
        return bool(old_sep and new_sep and old_etag) and old_etag == new_etag

    def open(self, entry: Entry) -> IO[bytes]:
        if entry.size is not None and entry.size > self.max_bytes:
            raise EntryTooLarge(too_large(entry.key, self.max_bytes))
        try:
            response = self.client.get_object(
                Bucket=self.bucket,
                Key=self.prefix + entry.key,
                IfMatch=entry.version.split("@", 1)[0],
            )
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code in MISSING_KEY:
                raise EntryGone(f"{entry.key} was removed since the listing.") from None
            if code in CHANGED:
                raise SourceError(
                    f"{entry.key} changed since the listing; the next sync takes it."
                ) from None
            raise SourceError(self._reason(exc, f"reading {entry.key}")) from None
        except BotoCoreError as exc:
            raise SourceError(self._reason(exc, f"reading {entry.key}")) from None
        body = response["Body"]
        if response.get("ContentLength", 0) > self.max_bytes:
            body.close()
            raise EntryTooLarge(too_large(entry.key, self.max_bytes))
        return BoundedReader(body, limit=self.max_bytes, name=entry.key)

    def _entry(
        self,
        obj: Mapping[str, Any],
        sidecars: Mapping[str, Mapping[str, Any]],
        known: Mapping[str, str],
    ) -> Entry | Skipped:
        full_key = obj["Key"]
        key = full_key.removeprefix(self.prefix)
        version = f"{obj['ETag'].strip('"')}@{obj['LastModified'].isoformat()}"
        sidecar = sidecars.get(full_key + SIDECAR_SUFFIX)
        if sidecar is not None:
            version += f"+{sidecar['ETag'].strip('"')}"
        # The key's folders below the prefix, as a folder source gives them.
        metadata: dict[str, Any] = {"path_segments": key.split("/")[:-1]}
        content_type = None
        if known.get(key) != version:
            try:
                head = self.client.head_object(Bucket=self.bucket, Key=full_key)
                metadata.update(head.get("Metadata", {}))
                content_type = head.get("ContentType")
                if sidecar is not None:
                    metadata.update(self._sidecar(full_key + SIDECAR_SUFFIX))
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code", "") in MISSING_KEY:
                    return Skipped(key, f"{key} was removed during the listing.")
                return Skipped(key, self._reason(exc, f"reading {key}"))
            except SourceError as exc:
                return Skipped(key, exc.reason)
        return Entry(
            key=key,
            version=version,
            name=key.rsplit("/", 1)[-1],
            size=obj["Size"],
            content_type=content_type,
            metadata=metadata,
        )

    def _sidecar(self, full_key: str) -> dict[str, Any]:
        response = self.client.get_object(Bucket=self.bucket, Key=full_key)
        data = response["Body"].read(SIDECAR_MAX_BYTES + 1)
        response["Body"].close()
        return parse_sidecar(data, full_key.removeprefix(self.prefix))

    def _reason(self, exc: Exception, doing: str) -> str:
        where = f"s3://{self.bucket}/{self.prefix} (store {self.store_name!r})"
        if isinstance(exc, ClientError):
            error = exc.response.get("Error", {})
            code = error.get("Code", "")
            if code in MISSING_BUCKET and doing == "listing":
                return (
                    f"The bucket {self.bucket!r} no longer exists; the listing of "
                    f"{where} was cut short."
                )
            if code in {"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch"}:
                return f"{where} refused the store's credentials ({code})."
            return f"{where} answered {code or 'an error'} while {doing}."
        return f"{where} could not be reached while {doing} ({exc})."
