"""Fixed-window counters in PostgreSQL: requests per credential per minute,
writes per credential per hour, failed authentications per client address per
minute, client registrations per address per hour.

The counters live in the database so that every uvicorn worker (and every
machine behind a load balancer) sees the same count. The request counter of an
API key is bumped by the admission statement (documents.access.admission) in
the same round trip that looks up the channel and the key.
"""

import datetime
import math
from dataclasses import dataclass

from django.conf import settings
from django.db import connection
from django.utils import timezone

from documents.models import AddressWindow, RateLimitWindow

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

    @classmethod
    def registrations(cls) -> "Window":
        return cls.current(length=HOUR, limit=settings.OAUTH_REGISTRATIONS_PER_HOUR)

    @property
    def counting(self) -> bool:
        return self.limit > 0

    def exceeded(self, count: int) -> bool:
        return self.counting and count > self.limit

    def retry_after(self) -> int:
        """Seconds until the next window (Retry-After)."""
        elapsed = (self.now - self.start).total_seconds()
        return max(1, math.ceil(self.length.total_seconds() - elapsed))


def _bump(table: str, key_column: str, key: str, bucket: str, start) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            f"""INSERT INTO {table} ({key_column}, bucket, window_start, count)
                VALUES (%s, %s, %s, 1)
                ON CONFLICT ({key_column}, bucket, window_start)
                DO UPDATE SET count = {table}.count + 1 RETURNING count""",
            [key, bucket, start],
        )
        (count,) = cursor.fetchone()
    return count


def clear_old_windows(*, subject: str, window: Window) -> None:
    """The first request of a window clears the subject's windows older than an hour."""
    RateLimitWindow.objects.filter(
        subject=subject, window_start__lt=window.start - HOUR
    ).delete()


def count_request(subject: str) -> Window | None:
    """Count one request of `subject` (sign-in grants; keys are counted by the
    admission statement); the window when the limit is passed, else None."""
    window = Window.requests()
    if not window.counting:
        return None
    count = _bump(
        RateLimitWindow._meta.db_table,
        "subject",
        subject,
        RateLimitWindow.Bucket.REQUESTS,
        window.start,
    )
    if count == 1:
        clear_old_windows(subject=subject, window=window)
    return window if window.exceeded(count) else None


def count_write(subject: str) -> Window | None:
    """Count one write against the subject's hourly quota; the window when the
    quota is used up (the write must be refused), else None."""
    window = Window.writes()
    if not window.counting:
        return None
    count = _bump(
        RateLimitWindow._meta.db_table,
        "subject",
        subject,
        RateLimitWindow.Bucket.WRITES,
        window.start,
    )
    return window if window.exceeded(count) else None


def failures_from(address: str) -> int:
    """Failed authentications from `address` in the current minute."""
    window = Window.failures()
    return (
        AddressWindow.objects.filter(
            address=address,
            bucket=AddressWindow.Bucket.FAILURES,
            window_start=window.start,
        )
        .values_list("count", flat=True)
        .first()
        or 0
    )


def count_failure(address: str) -> int:
    """Count one failed authentication from `address`; the window's new count."""
    window = Window.failures()
    count = _bump(
        AddressWindow._meta.db_table,
        "address",
        address,
        AddressWindow.Bucket.FAILURES,
        window.start,
    )
    if count == 1:
        AddressWindow.objects.filter(window_start__lt=window.start - HOUR).delete()
    return count


def count_registration(address: str) -> Window | None:
    """Count one client registration from `address`; the window when the hourly
    limit is passed, else None."""
    window = Window.registrations()
    count = _bump(
        AddressWindow._meta.db_table,
        "address",
        address,
        AddressWindow.Bucket.REGISTRATIONS,
        window.start,
    )
    return window if window.exceeded(count) else None
