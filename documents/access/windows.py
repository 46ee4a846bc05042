"""Fixed-window counters in PostgreSQL: requests per key per minute, writes per
key per hour, failed authentications per client address per minute.

The counters live in the database so that every uvicorn worker (and every
machine behind a load balancer) sees the same count. The request counter is
bumped by the admission statement (documents.access.admission) in the same
round trip that looks up the channel and the key.
"""

import datetime
import math
from dataclasses import dataclass

from django.conf import settings
from django.db import connection
from django.utils import timezone

from documents.models import FailureWindow, RateLimitWindow

MINUTE = datetime.timedelta(minutes=1)
HOUR = datetime.timedelta(hours=1)


def _now() -> datetime.datetime:
    """The limiter's clock (tests pin it inside one window)."""
    return timezone.now()


@dataclass(frozen=True)
class Window:
    """The fixed window a moment falls in, and the limit that applies."""

    now: datetime.datetime
    start: datetime.datetime
    length: datetime.timedelta
    limit: int  # per window; 0 turns the limit off

    @classmethod
    def current(cls, *, length: datetime.timedelta = MINUTE, limit: int) -> "Window":
        now = _now()
        start = now.replace(second=0, microsecond=0)
        if length == HOUR:
            start = start.replace(minute=0)
        return cls(now=now, start=start, length=length, limit=limit)

    @classmethod
    def requests(cls) -> "Window":
        return cls.current(limit=settings.MCP_RATE_LIMIT_PER_MINUTE)

    @classmethod
    def failures(cls) -> "Window":
        return cls.current(limit=settings.AUTH_FAILURES_PER_MINUTE)

    @classmethod
    def writes(cls) -> "Window":
        return cls.current(length=HOUR, limit=settings.API_WRITES_PER_HOUR)

    @property
    def counting(self) -> bool:
        return self.limit > 0

    def exceeded(self, count: int) -> bool:
        return self.counting and count > self.limit

    def retry_after(self) -> int:
        """Seconds until the next window (Retry-After)."""
        elapsed = (self.now - self.start).total_seconds()
        return max(1, math.ceil(self.length.total_seconds() - elapsed))


def clear_old_windows(*, api_key_id: int, window: Window) -> None:
    """The first request of a window clears the key's windows older than an hour."""
    RateLimitWindow.objects.filter(
        api_key_id=api_key_id, window_start__lt=window.start - HOUR
    ).delete()


def count_write(api_key_id: int) -> Window | None:
    """Count one write against the key's hourly quota; the window when the quota
    is used up (the write must be refused), else None."""
    window = Window.writes()
    if not window.counting:
        return None
    table = RateLimitWindow._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"""INSERT INTO {table} (api_key_id, bucket, window_start, count)
                VALUES (%s, %s, %s, 1)
                ON CONFLICT (api_key_id, bucket, window_start)
                DO UPDATE SET count = {table}.count + 1 RETURNING count""",
            [api_key_id, RateLimitWindow.Bucket.WRITES, window.start],
        )
        (count,) = cursor.fetchone()
    return window if window.exceeded(count) else None


def count_failure(address: str) -> int:
    """Count one failed authentication from `address`; the window's new count."""
    window = Window.failures()
    table = FailureWindow._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"""INSERT INTO {table} (address, window_start, count)
                VALUES (%s, %s, 1)
                ON CONFLICT (address, window_start)
                DO UPDATE SET count = {table}.count + 1 RETURNING count""",
            [address, window.start],
        )
        (count,) = cursor.fetchone()
    if count == 1:
        FailureWindow.objects.filter(window_start__lt=window.start - HOUR).delete()
    return count
