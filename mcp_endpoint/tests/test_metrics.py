"""/metrics after a known sequence of MCP calls: each call is counted by
method, tool, channel and outcome (an isError result as tool_error, though its
HTTP status is 200), refusals by reason, durations in the histogram; names a
client made up never become labels."""

import ipaddress
import json

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from documents.models import Document
from mcp_endpoint.tests.conftest import McpClient

pytestmark = pytest.mark.django_db


def scrape() -> dict[tuple, float]:
    response = Client().get("/metrics")
    assert response.status_code == 200
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def calls(samples, **labels) -> float:
    key = ("quire_mcp_calls_total", tuple(sorted(labels.items())))
    return samples.get(key, 0.0)


@pytest.fixture(autouse=True)
def _metrics_open_to_the_test_client(settings):
    settings.METRICS_ALLOWED_ADDRESSES = [ipaddress.ip_network("127.0.0.1/32")]


def test_calls_are_counted_by_method_tool_channel_and_outcome(mcp):
    before = scrape()
    mcp.result("tools/list")
    mcp.call_tool_expecting_success("list_documents")
    mcp.call_tool_expecting_success("list_documents")
    mcp.call_tool_expecting_error("get_pages", {"document_id": 999999, "pages": "1"})
    mcp.error("tools/call", {"name": "no_such_tool_x1", "arguments": {}})
    refused = McpClient("handbook", "qk_not-a-real-key", "modern")
    assert refused.send("tools/list").status_code == 401
    stranger = McpClient("nowhere-channel-x1", None, "modern")
    stranger.send("tools/list")
    after = scrape()

    def delta(**labels):
        return calls(after, **labels) - calls(before, **labels)

    assert delta(method="tools/list", tool="-", channel="handbook", outcome="ok") == 1
    ok = dict(method="tools/call", tool="list_documents", channel="handbook")
    assert delta(**ok, outcome="ok") == 2
    assert (
        delta(
            method="tools/call",
            tool="get_pages",
            channel="handbook",
            outcome="tool_error",
        )
        == 1
    )
    # An unknown tool is "other", an unknown channel "-": no label per guess.
    other = [
        labels for (name, labels), _ in after.items() if name == "quire_mcp_calls_total"
    ]
    assert not any("no_such_tool_x1" in json.dumps(dict(lab)) for lab in other)
    assert not any("nowhere-channel-x1" in json.dumps(dict(lab)) for lab in other)
    assert delta(method="-", tool="-", channel="-", outcome="key refused (401)") == 2

    refusals = (
        "quire_admission_refusals_total",
        (("door", "mcp"), ("reason", "invalid_token")),
    )
    assert after.get(refusals, 0) - before.get(refusals, 0) == 1
    histogram = ("quire_mcp_call_seconds_count", (("method", "tools/call"),))
    assert after[histogram] - before.get(histogram, 0) == 4


def test_database_gauges_are_read_at_scrape_time(mcp):
    samples = scrape()
    ready = samples[("quire_documents", (("status", "ready"),))]
    assert ready == Document.objects.filter(status="ready").count() > 0
    assert ("quire_workers_seen", ()) in samples
