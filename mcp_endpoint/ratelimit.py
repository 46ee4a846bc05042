"""A fixed-window rate limit per API key, counted in PostgreSQL.

The counter lives in the database so that every uvicorn worker (and every
machine behind a load balancer) sees the same count. It is bumped by the
admission statement (mcp_endpoint.admission), in the same round trip that looks
up the channel and the key.
"""

import datetime
import math
from dataclasses import dataclass

from django.conf import settings
from django.utils import timezone

from mcp_endpoint.models import RateLimitWindow

WINDOW_SECONDS = 60


def _now() -> datetime.datetime:
    """The limiter's clock (tests pin it inside one window)."""
    return timezone.now()


@dataclass(frozen=True)
class Window:
    """The one-minute window a request falls in, and the limit that applies."""

    now: datetime.datetime
    start: datetime.datetime
    limit: int  # requests per window; 0 or less turns the limit off

    @classmethod
    def current(cls) -> "Window":
        now = _now()
        return cls(
            now=now,
            start=now.replace(second=0, microsecond=0),
            limit=settings.MCP_RATE_LIMIT_PER_MINUTE,
        )

    @property
    def counting(self) -> bool:
        return self.limit > 0

    def retry_after(self, *, api_key_id: int, count: int) -> int | None:
        """None when the count-th request is allowed, else the seconds to wait
        (Retry-After). The first request of a window clears the key's old ones."""
        if count == 1:
            RateLimitWindow.objects.filter(
                api_key_id=api_key_id,
                window_start__lt=self.start - datetime.timedelta(hours=1),
            ).delete()
        if count <= self.limit:
            return None
        elapsed = (self.now - self.start).total_seconds()
        return max(1, math.ceil(WINDOW_SECONDS - elapsed))
