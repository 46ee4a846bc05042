"""What the authorization server remembers beyond the library's own tables."""

from django.db import models


class SpentCode(models.Model):
    """An authorization code already exchanged, and the token family it began.

    The library deletes a code once it is used, so a replay would look like an
    unknown code; this row lets the token endpoint recognise the replay and
    revoke what the code produced (RFC 6749 section 4.1.2).
    """

    code_digest = models.CharField(max_length=64, unique=True)
    token_family = models.UUIDField(null=True)
    spent_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        verbose_name = "spent authorization code"

    def __str__(self) -> str:
        return f"code {self.code_digest[:8]}…"
