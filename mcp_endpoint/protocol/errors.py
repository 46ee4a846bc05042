"""JSON-RPC error codes, their HTTP statuses on the 2026-07-28 wire, and the
exception handlers raise to answer with one."""

from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002
HEADER_MISMATCH = -32020
MISSING_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022
# Transport-level refusals (sent without a request id), in the
# implementation-defined range: mcp_endpoint.views and project.body_limit.
UNAUTHORIZED = -32001
FORBIDDEN = -32003
BODY_TOO_LARGE = -32004
RATE_LIMITED = -32005

# The -32603 message while PostgreSQL is down or restarting, or no pooled
# connection frees up in time (DATABASE_POOL_TIMEOUT).
DATABASE_UNAVAILABLE = "The database is unavailable or busy; try again shortly."

MODERN_HTTP_STATUS = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    MISSING_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    METHOD_NOT_FOUND: 404,
}


class JsonRpcError(Exception):
    """A protocol failure, answered as a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def as_dict(self) -> dict:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error
