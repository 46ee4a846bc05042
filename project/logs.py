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
REDACTED = "[redacted]"


def redact(text: str) -> str:
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


def redact_access_log() -> None:
    """Attach the filter to uvicorn's loggers, which don't pass through the
    root handler (the settings' LOGGING attaches it there)."""
    for name in ("uvicorn.access", "uvicorn.error"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactSecrets) for f in logger.filters):
            logger.addFilter(RedactSecrets())
