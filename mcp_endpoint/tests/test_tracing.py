"""Traces of MCP calls, with the OpenTelemetry SDK's in-memory exporter: one
rag_search is one span named as the GenAI conventions name MCP spans, in the
caller's trace (params._meta.traceparent), with the admission, the query
embedding, both search legs and the answer below it."""

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, StatusCode

from documents.telemetry import tracing
from mcp_endpoint.tests.conftest import McpClient

pytestmark = pytest.mark.django_db

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"


@pytest.fixture(scope="module")
def exporter():
    """The SDK installed once for the process (OpenTelemetry allows one
    provider), its spans kept in memory."""
    if tracing.enabled():
        pytest.skip("a tracer provider is installed already")
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracing.install(provider)
    yield memory
    memory.shutdown()  # later tests' spans are dropped, not kept in memory


def test_a_rag_search_is_one_span_tree_in_the_callers_trace(mcp, exporter):
    exporter.clear()
    result = mcp.result(
        "tools/call",
        {
            "name": "rag_search",
            "arguments": {"query": "How do I reset the pump?"},
            "_meta": {"traceparent": TRACEPARENT},
        },
    )
    assert not result.get("isError"), result
    spans = exporter.get_finished_spans()
    (root,) = [s for s in spans if s.name == "tools/call rag_search"]
    assert root.kind == SpanKind.SERVER
    assert format(root.context.trace_id, "032x") == TRACE_ID
    assert format(root.parent.span_id, "016x") == PARENT_ID
    assert root.attributes["mcp.method.name"] == "tools/call"
    assert root.attributes["gen_ai.tool.name"] == "rag_search"

    by_id = {s.context.span_id: s for s in spans}

    def under_root(span) -> bool:
        while span.parent is not None and span.parent.span_id in by_id:
            span = by_id[span.parent.span_id]
            if span is root:
                return True
        return False

    names = {s.name for s in spans if under_root(s)}
    assert {
        "admission",
        "embedding",
        "search keyword",
        "search vector",
        "answer",
    } <= names
    (admission,) = [s for s in spans if s.name == "admission"]
    assert admission.parent.span_id == root.context.span_id
    assert root.start_time <= admission.start_time <= admission.end_time
    assert all(format(s.context.trace_id, "032x") == TRACE_ID for s in spans)


def test_a_failed_call_is_marked_with_its_error_type(mcp, exporter):
    exporter.clear()
    mcp.call_tool("get_pages", {"document_id": 999999, "pages": "1"})
    (root,) = [s for s in exporter.get_finished_spans() if s.name.startswith("tools")]
    assert root.name == "tools/call get_pages"
    assert root.status.status_code == StatusCode.ERROR
    assert root.attributes["error.type"] == "tool_error"
    # Without a traceparent the call starts a trace of its own.
    assert root.parent is None


def test_traces_stay_off_without_otel_variables():
    assert tracing.configure_from_environment({}) is False
    assert (
        tracing.configure_from_environment(
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318",
                "OTEL_SDK_DISABLED": "true",
            }
        )
        is False
    )
    assert tracing.configure_from_environment({"OTEL_TRACES_EXPORTER": "none"}) is False


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_the_call_log_carries_the_callers_trace_context(
    era, handbook, handbook_key, caplog
):
    """traceparent, tracestate and baggage from params._meta (SEP-414) end
    the call's log line, in both eras; tracestate and baggage are quoted, so
    (every value is a JSON string), so their spaces stay inside one value."""
    client = McpClient("handbook", handbook_key, era)
    meta = {
        "traceparent": TRACEPARENT,
        "tracestate": "quire=abc, vendor=x",
        "baggage": "user.team=people, tenant=acme",
    }
    with caplog.at_level("INFO", logger="mcp_endpoint"):
        client.result("tools/list", {"_meta": meta})
    (line,) = [
        r.getMessage() for r in caplog.records if "method=tools/list" in r.getMessage()
    ]
    assert line.endswith(
        f' traceparent="{TRACEPARENT}" tracestate="quire=abc, vendor=x" '
        'baggage="user.team=people, tenant=acme"'
    )


def test_malformed_trace_context_stays_out_of_the_call_log(mcp, caplog):
    """A traceparent that is not W3C-shaped, or a value with a line break, is
    dropped: the log line stays one line with no caller-made fields."""
    meta = {
        "traceparent": "not-a-trace\nkey=forged",
        "baggage": "a=1\nmcp channel=other",
        "tracestate": "x" * 10_000,
    }
    with caplog.at_level("INFO", logger="mcp_endpoint"):
        mcp.result("tools/list", {"_meta": meta})
    (line,) = [
        r.getMessage() for r in caplog.records if "method=tools/list" in r.getMessage()
    ]
    assert "\n" not in line
    assert "traceparent" not in line and "baggage" not in line
    assert "tracestate" not in line
    assert line.split()[-1].startswith("caller=")


def test_baggage_joins_the_span_context(mcp, exporter):
    """The request's span is parented to the caller's traceparent even when
    baggage comes with it (both propagators read the same _meta)."""
    exporter.clear()
    mcp.result(
        "tools/list",
        {"_meta": {"traceparent": TRACEPARENT, "baggage": "tenant=acme"}},
    )
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "tools/list"]
    assert format(span.context.trace_id, "032x") == TRACE_ID
