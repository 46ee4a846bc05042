"""No raw key in any log line (issue 11 item 10): the redaction filter."""

import logging

from django.test import RequestFactory

from documents.access import KEY_PREFIX
from documents.models import MCP_PATH_PREFIX
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


def _redacted_by_the_three_patterns(text: str) -> str:
    text = logs._KEY.sub(KEY_PREFIX + logs.REDACTED, text)
    text = logs._BEARER.sub(r"\1" + logs.REDACTED, text)
    return logs._QUERY_VALUE.sub(r"\1" + logs.REDACTED, text)


def test_the_quick_pass_skips_only_what_the_patterns_would_leave():
    """redact() skips its substitutions when a string can hold no secret: the
    result is the same as running all three, secret or not."""
    key = "qk_" + "k" * 43
    samples = [
        "mcp method=%s tool=%s channel=%s status=%s outcome=%s ms=%.1f caller=%s%s",
        "tools/list",
        "qk_A1b2-C3d",
        key,
        f"prefix{key}suffix",
        "BeArEr abc.def",
        "authorization: bearer  tok+/=",
        "bearer",
        "/x?a=1&b=2",
        "/x?=1",
        "a&b=c",
        'traceparent="00-abc" tracestate="k=v,bearer x"',
        "",
    ]
    for text in samples:
        assert logs.redact(text) == _redacted_by_the_three_patterns(text), text
    assert logs.redact(key) != key and logs.redact("/x?a=1") == "/x?a=[redacted]"


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


def test_the_filters_mcp_prefix_is_the_endpoints_own():
    assert logs.MCP_PATH_PREFIX == MCP_PATH_PREFIX


def _record(name: str, msg: str, args: tuple = (), **extra) -> logging.LogRecord:
    record = logging.LogRecord(name, logging.WARNING, __file__, 1, msg, args, None)
    record.__dict__.update(extra)
    return record


def test_mcp_requests_leave_their_line_to_the_call_log():
    """uvicorn's access line and django.request's 4xx warning are dropped for
    MCP requests (the call log writes one line each); other paths, and server
    errors on MCP, still pass."""
    keep = logs.OneLinePerMcpCall().filter
    access = '%s - "%s %s HTTP/%s" %d'
    assert not keep(
        _record("uvicorn.access", access, ("1.2.3.4:5", "GET", "/mcp/demo", "1.1", 405))
    )
    assert keep(
        _record("uvicorn.access", access, ("1.2.3.4:5", "GET", "/admin/", "1.1", 200))
    )
    mcp, admin = RequestFactory().get("/mcp/demo"), RequestFactory().get("/admin/x")
    assert not keep(
        _record("django.request", "Method Not Allowed", request=mcp, status_code=405)
    )
    assert keep(_record("django.request", "Not Found", request=admin, status_code=404))
    assert keep(_record("django.request", "Server Error", request=mcp, status_code=500))
