"""Per-key request counters shared by every worker process (the rate limit)."""

from django.db import models


class RateLimitWindow(models.Model):
    """How many MCP requests one API key made in one fixed one-minute window."""

    api_key = models.ForeignKey(
        "documents.ApiKey", on_delete=models.CASCADE, related_name="+"
    )
    window_start = models.DateTimeField()
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["api_key", "window_start"], name="ratelimit_unique_window"
            )
        ]

    def __str__(self) -> str:
        return f"{self.api_key_id}@{self.window_start:%H:%M}: {self.count}"
