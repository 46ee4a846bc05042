"""No raw key in any log line (issue 11 item 10): the redaction filter."""

import logging

from documents.access import KEY_PREFIX
from project import logs


def test_the_filters_key_prefix_is_the_keys_own():
    assert logs.KEY_PREFIX == KEY_PREFIX


def test_keys_tokens_and_query_values_are_redacted_but_prefixes_kept():
    key = "qk_" + "A1b2-C3d4_" * 4 + "xyz"
    line = logs.redact(
        f'127.0.0.1:5000 - "GET /api/channels?api_key={key}&x=1 HTTP/1.1" 401 '
        f"Authorization: Bearer {key} Bearer eyJhbGciOi.abc.def prefix qk_A1b2-C3d"
    )
    assert key not in line and "eyJhbGciOi" not in line
    assert "/api/channels?api_key=[redacted]&x=[redacted]" in line
    assert "Bearer [redacted]" in line
    assert "prefix qk_A1b2-C3d" in line  # the stored prefix names the key


def test_records_are_redacted_in_their_arguments_too():
    key = "qk_" + "z" * 43
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        "",
        0,
        '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:1", "GET", f"/x?token={key}", "1.1", 200),
        None,
    )
    assert logs.RedactSecrets().filter(record)
    assert key not in record.getMessage()
    assert record.args[4] == 200


def test_uvicorns_loggers_get_the_filter():
    logs.redact_access_log()
    logs.redact_access_log()
    filters = logging.getLogger("uvicorn.access").filters
    assert sum(isinstance(f, logs.RedactSecrets) for f in filters) == 1
