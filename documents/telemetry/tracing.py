"""OpenTelemetry traces, when the operator asks for them with the standard
OTEL_* variables (nothing is exported, and spans cost nothing, otherwise).

A span per MCP request, named as the GenAI semantic conventions name MCP
spans (`{mcp.method.name} {gen_ai.tool.name}`), joined to the caller's trace
from `params._meta.traceparent` / `tracestate` (W3C trace context) and
`baggage` (W3C baggage), the keys SEP-414 reserves; child spans for the
admission (timed before the body told the parent, so recorded with its own
start and end), the query embedding, each search leg and the answer. The SDK,
the OTLP exporter and the propagator are the OpenTelemetry packages'.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Mapping
from concurrent.futures import Future
from typing import Any

from opentelemetry import trace
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.propagators.composite import CompositePropagator
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import (
    TraceContextTextMapPropagator,
)

tracer = trace.get_tracer("quire")
_propagator = CompositePropagator(
    [TraceContextTextMapPropagator(), W3CBaggagePropagator()]
)
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$")
# W3C limits: tracestate 32 members of at most 256 characters; baggage 8192 bytes.
TRACE_CONTEXT_MAX_CHARS = {"tracestate": 512 * 16, "baggage": 8192}
_enabled = False
_NOTHING = contextlib.nullcontext()

# Any of these set (and OTEL_SDK_DISABLED not true) turns tracing on.
OTEL_SWITCHES = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_TRACES_EXPORTER",
)


def configure_from_environment(environ: Mapping[str, str] = os.environ) -> bool:
    """Install the SDK with a batching exporter when the OTEL_* variables ask
    for traces (OTEL_TRACES_EXPORTER=otlp, the default, or console; the
    exporter and the resource read their own variables: endpoint, headers,
    OTEL_SERVICE_NAME...). True when traces are on."""
    if environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return False
    exporter_name = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter_name == "none" or not any(environ.get(n) for n in OTEL_SWITCHES):
        return False
    if exporter_name == "console":
        exporter = ConsoleSpanExporter()
    else:
        exporter = OTLPSpanExporter()
    service = environ.get("OTEL_SERVICE_NAME") or "quire"
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    install(provider)
    return True


def install(provider: TracerProvider) -> None:
    """Send spans to `provider` (configure_from_environment's, or a test's)."""
    global _enabled
    trace.set_tracer_provider(provider)
    _enabled = True


def enabled() -> bool:
    return _enabled


def span(name: str, **attributes: Any):
    """A child span of the current one, as a context manager (a shared no-op
    when traces are off)."""
    if not _enabled:
        return _NOTHING
    return tracer.start_as_current_span(name, attributes=attributes)


def open_span(name: str, **attributes: Any) -> trace.Span | None:
    """A child span of the current one, started but not made current (for
    work that ends elsewhere: the caller ends it); None when traces are off."""
    if not _enabled:
        return None
    return tracer.start_span(name, attributes=attributes)


def span_until_done(future: Future, name: str, **attributes: Any) -> None:
    """A child span of the current one from now until `future` is done (for
    work another thread finishes, such as a queued query embedding); marked
    failed when the future fails. Nothing when traces are off."""
    child = open_span(name, **attributes)
    if child is None:
        return

    def end(done: Future) -> None:
        if done.cancelled() or done.exception() is not None:
            child.set_status(Status(StatusCode.ERROR))
        child.end()

    future.add_done_callback(end)


def trace_context(meta: Any) -> dict[str, str]:
    """The W3C trace context a request's `params._meta` carries: `traceparent`
    when well formed, and `tracestate`/`baggage` (printable, within the W3C
    limits) beside it. Anything else is dropped, so a caller cannot put line
    breaks or megabytes into the call log."""
    if not isinstance(meta, dict):
        return {}
    context = {}
    traceparent = meta.get("traceparent")
    if isinstance(traceparent, str) and _TRACEPARENT.match(traceparent):
        context["traceparent"] = traceparent
    for key, limit in TRACE_CONTEXT_MAX_CHARS.items():
        value = meta.get(key)
        if isinstance(value, str) and len(value) <= limit and value.isprintable():
            context[key] = value
    return context


@contextlib.contextmanager
def mcp_span(
    *,
    method: str,
    tool: str,
    meta: Any,
    attributes: Mapping[str, Any],
    started_ns: int | None,
    admission_ns: tuple[int, int] | None,
) -> Iterator[trace.Span | None]:
    """The span of one MCP request, parented to `meta`'s traceparent, with
    the admission recorded as its first child."""
    if not _enabled:
        yield None
        return
    carrier = trace_context(meta)
    parent = _propagator.extract(carrier) if carrier else None
    name = f"{method} {tool}" if tool else method
    current = tracer.start_span(
        name,
        context=parent,
        kind=SpanKind.SERVER,
        attributes={"mcp.method.name": method, **attributes}
        | ({"gen_ai.tool.name": tool} if tool else {}),
        start_time=started_ns,
    )
    if admission_ns:
        tracer.start_span(
            "admission",
            context=trace.set_span_in_context(current),
            start_time=admission_ns[0],
        ).end(end_time=admission_ns[1])
    with trace.use_span(current, end_on_exit=True):
        yield current


def failed(span: trace.Span | None, error_type: str) -> None:
    """Mark the request's span failed (`error.type`, as the conventions say)."""
    if span is not None:
        span.set_attribute("error.type", error_type)
        span.set_status(Status(StatusCode.ERROR))
