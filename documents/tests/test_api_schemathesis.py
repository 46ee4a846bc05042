"""schemathesis against /api/openapi.json with a valid key: generated requests
(valid and invalid) never get a 5xx, and every response matches the schema
(status code, content type, body)."""

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from documents.access import COMMAND_LINE
from documents.services.keys import create_api_key
from documents.tests.corpus import add_document

CHECKS = [
    schemathesis.checks.not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@pytest.fixture
def api_key(make_channel, fake_embedder):
    channel = make_channel(
        "fuzzed",
        fields=[
            {"name": "kind", "type": "string", "filterable": True},
            {"name": "published", "type": "date", "filterable": True},
        ],
    )
    for number, kind in enumerate(["guide", "policy", "guide"], start=1):
        add_document(
            channel,
            title=f"Document {number}",
            pages=[f"Page one of a {kind} about holidays.", "Page two, expenses."],
            metadata={"kind": kind, "published": f"2024-0{number}-01"},
        )
    return create_api_key(actor=COMMAND_LINE, name="fuzzer", channels=[channel]).raw_key


@pytest.fixture
def api_schema(db):
    """The schema, served in-process by WSGI so requests share the test's
    database transaction (like Django's test client, the handler must not close
    the connection at the end of each request)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield schemathesis.openapi.from_wsgi(
            "/api/openapi.json", get_wsgi_application()
        )
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


# schemathesis' pytest plugin does not run under pytest 9 yet, so the operations
# are driven with hypothesis directly: both valid and invalid requests, a bounded
# number of each per operation (well under a minute in all).
SETTINGS = settings(
    max_examples=25,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)


def run_operation(operation, mode: GenerationMode, headers: dict, statuses: list):
    @SETTINGS
    @given(case=operation.as_strategy(generation_mode=mode))
    def check(case):
        if "slug" in case.path_parameters and mode == GenerationMode.POSITIVE:
            # The real channel, so requests get past the channel lookup.
            case.path_parameters["slug"] = "fuzzed"
        response = case.call_and_validate(headers=headers, checks=CHECKS)
        statuses.append(response.status_code)

    check()


def test_api_conforms_to_its_openapi_schema(api_schema, api_key, settings):
    """No generated request gets a 5xx or a response that breaks the schema."""
    settings.MCP_RATE_LIMIT_PER_MINUTE = 0  # hundreds of requests in one minute
    headers = {"Authorization": f"Bearer {api_key}"}
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 10
    statuses: list[int] = []
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            run_operation(operation, mode, headers, statuses)
    # The run reached past validation into the services.
    assert statuses.count(200) >= 10, sorted(set(statuses))
    print(f"{len(statuses)} requests:", {s: statuses.count(s) for s in set(statuses)})
