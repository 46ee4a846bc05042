"""Who may call: the channel, the caller's key and the rate limit, in one round trip.

Every MCP call and REST request begins by looking up the channel it names,
checking the API key against it and counting the request against the key's
limit. Through the ORM that was three queries, and compiling them was the
largest single cost of a small MCP call (tools/list). Here it is one statement,
built once from the models' metadata, with the same rules: the key checks are
documents.services.keys.check_key's, and the counter is only bumped for an
active key that opens an existing channel.
"""

from dataclasses import dataclass
from functools import cache

from asgiref.sync import sync_to_async
from django.db import connection
from django.utils import timezone

from documents.models import ApiKey, Channel
from documents.services.keys import check_key, digest_key, require_key
from mcp_endpoint.models import RateLimitWindow
from mcp_endpoint.ratelimit import Window


@dataclass(frozen=True)
class Admission:
    channel: Channel | None  # None: no such channel (told only to a valid key)
    api_key: ApiKey
    retry_after: int | None  # None: allowed; else seconds until the next window


def _columns(model, alias: str) -> str:
    fields = model._meta.concrete_fields
    return ", ".join(f'{alias}."{field.column}"' for field in fields)


def _instance(model, values):
    """A model instance from its columns' values, converted as the ORM would
    (JSON fields arrive as text)."""
    fields = model._meta.concrete_fields
    values = [
        field.from_db_value(value, None, connection)
        if hasattr(field, "from_db_value")
        else value
        for field, value in zip(fields, values, strict=True)
    ]
    return model.from_db(connection.alias, [field.attname for field in fields], values)


@cache
def _statement() -> str:
    through = ApiKey._meta.get_field("channels")
    windows = RateLimitWindow._meta.db_table
    sql = f"""
        WITH channel AS (
            SELECT {_columns(Channel, "c")} FROM {Channel._meta.db_table} c
            WHERE c.slug = %(slug)s
        ), api_key AS (
            SELECT {_columns(ApiKey, "k")}, EXISTS (
                SELECT 1 FROM {through.m2m_db_table()} kc, channel
                WHERE kc.{through.m2m_column_name()} = k.id
                  AND kc.{through.m2m_reverse_name()} = channel.id
            ) AS opens_channel
            FROM {ApiKey._meta.db_table} k
            WHERE k.digest = %(digest)s
        ), counted AS (
            INSERT INTO {windows} (api_key_id, window_start, count)
            SELECT id, %(window_start)s, 1 FROM api_key
            WHERE %(counting)s AND opens_channel AND revoked_at IS NULL
              AND (expires_at IS NULL OR expires_at > %(now)s)
            ON CONFLICT (api_key_id, window_start)
            DO UPDATE SET count = {windows}.count + 1
            RETURNING count
        )
        SELECT api_key.*, (SELECT count FROM counted), channel.*
        FROM api_key LEFT JOIN channel ON TRUE
    """
    return sql


def admit(channel_slug: str, raw_key: str | None) -> Admission:
    """The channel, the active key that opens it and the rate limit's verdict;
    KeyRejected (401/403) when the key is missing, unknown, revoked, expired or
    not for this channel."""
    digest = digest_key(require_key(raw_key))
    window = Window.current()
    with connection.cursor() as cursor:
        cursor.execute(
            _statement(),
            {
                "slug": channel_slug,
                "digest": digest,
                "window_start": window.start,
                "counting": window.counting,
                "now": timezone.now(),
            },
        )
        row = cursor.fetchone()
    if row is None:
        check_key(None, digest, channel=None, opens_channel=False)  # raises
    size = len(ApiKey._meta.concrete_fields)
    api_key = _instance(ApiKey, row[:size])
    opens_channel, count = row[size], row[size + 1]
    channel_values = row[size + 2 :]
    channel = _instance(Channel, channel_values) if channel_values[0] else None
    check_key(api_key, digest, channel=channel, opens_channel=opens_channel)
    retry_after = None
    if channel is not None and count is not None:
        retry_after = window.retry_after(api_key_id=api_key.pk, count=count)
    return Admission(channel=channel, api_key=api_key, retry_after=retry_after)


aadmit = sync_to_async(admit)
