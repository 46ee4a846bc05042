"""Access rules in one place, for MCP, the REST API, the admin and the playground.

- caller: who is calling (a key, a sign-in token and its grant, a staff
  session, a trusted process) and the one rule every door asks of it;
- principals: scopes (read, write), the audit's actor, refusals;
- admission: the caller of every MCP call and REST request, in one statement
  for API keys (channel, scope, rate limit, write quota, throttling after
  failed authentications); tokens: the same for sign-in tokens;
- staff: which channels a person curates or reads;
- windows: the counters behind the limits;
- audit: the trail of writes and refused authentications.
"""

from documents.access.admission import (
    aadmit,
    aadmit_pooled,
    aadmit_released,
    admit,
    authenticate_key,
)
from documents.access.caller import Caller
from documents.access.keys import KEY_PREFIX, digest_key
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
    "Caller",
    "Scope",
    "aadmit",
    "aadmit_pooled",
    "aadmit_released",
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
