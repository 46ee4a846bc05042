"""A fixed-window rate limit per API key, counted in PostgreSQL.

The counter lives in the database so that every uvicorn worker (and every
machine behind a load balancer) sees the same count.
"""

import datetime
import math

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connection
from django.utils import timezone

from mcp_endpoint.models import RateLimitWindow

WINDOW_SECONDS = 60


def _now() -> datetime.datetime:
    """The limiter's clock (tests pin it inside one window)."""
    return timezone.now()


def hit_rate_limit(*, api_key_id: int) -> int | None:
    """Count one request; None when allowed, else the seconds to wait (Retry-After)."""
    limit = settings.MCP_RATE_LIMIT_PER_MINUTE
    if limit <= 0:
        return None
    now = _now()
    window_start = now.replace(second=0, microsecond=0)
    table = RateLimitWindow._meta.db_table
    # One statement, so concurrent workers can't both read the same old count.
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO {table} (api_key_id, window_start, count) VALUES (%s, %s, 1)
            ON CONFLICT (api_key_id, window_start)
            DO UPDATE SET count = {table}.count + 1
            RETURNING count
            """,
            [api_key_id, window_start],
        )
        (count,) = cursor.fetchone()
    if count == 1:
        RateLimitWindow.objects.filter(
            api_key_id=api_key_id,
            window_start__lt=window_start - datetime.timedelta(hours=1),
        ).delete()
    if count <= limit:
        return None
    elapsed = (now - window_start).total_seconds()
    return max(1, math.ceil(WINDOW_SECONDS - elapsed))


ahit_rate_limit = sync_to_async(hit_rate_limit)
