"""Access rules in one place, for MCP, the REST API, the admin and the playground.

- principals: scopes (read, write), the acting user or key, refusals;
- admission: the API key check of every MCP call and REST request (channel,
  scope, rate limit, write quota, throttling after failed authentications);
- staff: which channels a person curates or reads;
- windows: the counters behind the limits;
- audit: the trail of writes and refused authentications.
"""

from documents.access.admission import (
    KEY_PREFIX,
    Admission,
    aadmit,
    admit,
    authenticate_key,
    digest_key,
)
from documents.access.principals import (
    COMMAND_LINE,
    AccessDenied,
    Actor,
    Scope,
    client_address,
    credential_from,
)
from documents.access.staff import (
    CURATE,
    READ,
    can_curate,
    can_read,
    channels_for,
    restrict_to_curated,
)

__all__ = [
    "COMMAND_LINE",
    "CURATE",
    "KEY_PREFIX",
    "READ",
    "AccessDenied",
    "Actor",
    "Admission",
    "Scope",
    "aadmit",
    "admit",
    "authenticate_key",
    "can_curate",
    "can_read",
    "channels_for",
    "client_address",
    "credential_from",
    "digest_key",
    "restrict_to_curated",
]
