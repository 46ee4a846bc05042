"""No secret in any log line: API keys, tokens and query strings are redacted.

uvicorn's access log writes each request line as sent, query string included
(`GET /api/channels?api_key=qk_... HTTP/1.1`); a key pasted into a URL would
sit in the log in plain text. `RedactSecrets` rewrites every record that passes
it: query strings lose their values, and anything shaped like a Quire key or a
bearer token is replaced.
"""

import logging
import re

# documents.access.KEY_PREFIX (logging is configured before apps load, so it
# can't be imported here; project/tests/test_logs.py checks they agree).
KEY_PREFIX = "qk_"
# A whole key is the prefix and 43 characters; the first 10 characters (the
# stored prefix, which names a key in the admin and in log lines) are kept.
_KEY = re.compile(re.escape(KEY_PREFIX) + r"[A-Za-z0-9_\-]{20,}")
_BEARER = re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/\-]+=*")
_QUERY_VALUE = re.compile(r"([?&][^=&\s\"]+=)[^&\s\"]*")
# What each of the three needs to match at all, in one pass: most strings
# (every argument of an MCP call's log line, its format string) hold none of
# it, and then the three substitutions, which are most of a log line's cost,
# can't change them. Their replacements add none of it either.
_MAY_HOLD_SECRET = re.compile(re.escape(KEY_PREFIX) + r"|(?i:bearer)|[?&][^=&\s\"]+=")
REDACTED = "[redacted]"


def redact(text: str) -> str:
    if _MAY_HOLD_SECRET.search(text) is None:
        return text
    text = _KEY.sub(KEY_PREFIX + REDACTED, text)
    text = _BEARER.sub(r"\1" + REDACTED, text)
    return _QUERY_VALUE.sub(r"\1" + REDACTED, text)


class RedactSecrets(logging.Filter):
    """A logging filter that redacts the message and its arguments."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.args:
            args = record.args if isinstance(record.args, tuple) else (record.args,)
            record.args = tuple(
                redact(arg) if isinstance(arg, str) else arg for arg in args
            )
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        return True


# documents.models.MCP_PATH_PREFIX, kept here for the same reason as KEY_PREFIX.
MCP_PATH_PREFIX = "/mcp/"


def _is_mcp_path(path: object) -> bool:
    return isinstance(path, str) and path.startswith(MCP_PATH_PREFIX)


class OneLinePerMcpCall(logging.Filter):
    """Drops the lines that repeat an MCP call's own log line
    (mcp_endpoint.views.CallLog): uvicorn's access line for the request, and
    django.request's warning for a 4xx answer. A stateless server answers GET
    and DELETE with 405 by design, and a client's sign-in starts with a 401:
    normal traffic, not warnings. Server errors (5xx) still pass."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == "uvicorn.access":
            args = record.args if isinstance(record.args, tuple) else ()
            return not (len(args) >= 3 and _is_mcp_path(args[2]))
        if record.name == "django.request":
            request = getattr(record, "request", None)
            status = getattr(record, "status_code", 500) or 500
            return not (_is_mcp_path(getattr(request, "path", None)) and status < 500)
        return True


def redact_access_log() -> None:
    """Attach the filters to uvicorn's loggers, which don't pass through the
    root handler (the settings' LOGGING attaches them there)."""
    for name in ("uvicorn.access", "uvicorn.error"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactSecrets) for f in logger.filters):
            logger.addFilter(RedactSecrets())
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, OneLinePerMcpCall) for f in access.filters):
        access.addFilter(OneLinePerMcpCall())
