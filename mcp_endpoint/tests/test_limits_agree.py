"""Each request limit is defined once (documents.limits, or the model field's
max_length) and every door states the same one: the MCP tools' input schemas,
the REST OpenAPI schema and the forms."""

import re
from pathlib import Path

import pytest
from django.test import Client

from documents import limits
from documents.forms import DocumentMetadataForm
from documents.models import Document
from mcp_endpoint.registry import InvalidResourceUri
from mcp_endpoint.resources import parse_document_ids

pytestmark = pytest.mark.django_db

REPO = Path(__file__).resolve().parents[2]
# Where the doors declare their arguments.
DOORS = [
    *sorted((REPO / "mcp_endpoint" / "tools").glob("*.py")),
    REPO / "mcp_endpoint" / "schemas.py",
    REPO / "mcp_endpoint" / "resources.py",
    REPO / "documents" / "api" / "schemas.py",
    REPO / "documents" / "api" / "routes.py",
    REPO / "documents" / "forms.py",
]
# A bound written as a number (0 or 1 as a lower bound is not a limit).
LITERAL_BOUND = re.compile(
    r"\b(max_length|le|lt)=\d|\b(min_length|ge|gt)=(?![01]\b)\d|"
    r"\"(maxItems|maxLength|maximum)\": \d|\[:\d+\]"
)


@pytest.fixture
def tools(mcp, handbook):
    handbook.tool_switches = handbook.tool_switches | {"research": True}
    handbook.save()
    return {tool["name"]: tool for tool in mcp.result("tools/list")["tools"]}


@pytest.fixture
def openapi() -> dict:
    return Client().get("/api/openapi.json").json()


def rest_body(openapi: dict, path: str) -> dict:
    """The properties of the JSON body a REST operation takes."""
    operation = openapi["paths"][path]["post"]
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    return resolve(openapi, schema)["properties"]


def resolve(openapi: dict, schema: dict) -> dict:
    if "$ref" in schema:
        return openapi["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def array_of(schema: dict) -> dict:
    return next(option for option in schema["anyOf"] if option["type"] == "array")


def test_the_document_ids_cap_is_the_same_everywhere(tools, openapi):
    """MAX_DOCUMENT_IDS caps document_ids in every MCP tool and REST body that
    takes them, and the metadata resource's list."""
    mcp = [
        array_of(tools["retrieve_text_chunks"]["inputSchema"]["properties"][name])
        for name in ["document_ids"]
    ] + [
        array_of(tools["rag_search"]["inputSchema"]["properties"]["document_ids"]),
        tools["get_citation_url"]["inputSchema"]["properties"]["document_ids"],
    ]
    rest = [
        array_of(rest_body(openapi, path)["document_ids"])
        for path in [
            "/api/channels/{slug}/search",
            "/api/channels/{slug}/answer",
        ]
    ]
    assert {s["maxItems"] for s in mcp + rest} == {limits.MAX_DOCUMENT_IDS}
    ids = ",".join(str(n) for n in range(1, limits.MAX_DOCUMENT_IDS + 2))
    with pytest.raises(InvalidResourceUri, match=str(limits.MAX_DOCUMENT_IDS)):
        parse_document_ids(ids)


def query_lengths(mcp) -> set[int]:
    tools = {tool["name"]: tool for tool in mcp.result("tools/list")["tools"]}
    return {
        tools[name]["inputSchema"]["properties"]["query"]["maxLength"]
        for name in ["retrieve_text_chunks", "rag_search", "search"]
    }


def test_query_length_follows_query_max_chars_at_every_door(
    mcp, tools, settings, openapi
):
    """Every query argument says QUERY_MAX_CHARS as its maxLength, over MCP and
    REST; the MCP schemas read it when they are built, so a change shows."""
    rest_lengths = {
        rest_body(openapi, path)["query"]["maxLength"]
        for path in ["/api/channels/{slug}/search", "/api/channels/{slug}/answer"]
    }
    assert rest_lengths == query_lengths(mcp) == {settings.QUERY_MAX_CHARS}
    settings.QUERY_MAX_CHARS = 321
    assert query_lengths(mcp) == {321}


def test_feedback_limits_and_answer_are_one_shape(tools, openapi):
    """submit_feedback and POST /feedback take the same lengths and scale, and
    both answer {"feedback_id": ...}."""
    mcp = tools["submit_feedback"]["inputSchema"]["properties"]
    rest = rest_body(openapi, "/api/channels/{slug}/feedback")
    for name, most in [
        ("query", limits.FEEDBACK_QUERY_MAX_CHARS),
        ("answer", limits.FEEDBACK_ANSWER_MAX_CHARS),
        ("comment", limits.FEEDBACK_COMMENT_MAX_CHARS),
    ]:
        assert mcp[name]["maxLength"] == rest[name]["maxLength"] == most, name
    for bound, value in [("minimum", limits.SCORE_MIN), ("maximum", limits.SCORE_MAX)]:
        assert mcp["score"][bound] == rest["score"][bound] == value
    created = openapi["paths"]["/api/channels/{slug}/feedback"]["post"]["responses"]
    answer = resolve(openapi, created["201"]["content"]["application/json"]["schema"])
    output = tools["submit_feedback"]["outputSchema"]
    assert set(answer["properties"]) == set(output["properties"]) == {"feedback_id"}
    assert output["required"] == ["feedback_id"]


def test_listing_default_and_title_length_come_from_one_place(tools, openapi):
    """list_documents and GET /documents default to LIST_LIMIT_DEFAULT; a title
    is as long as Document.title holds in the form and the upload."""
    assert (
        tools["list_documents"]["inputSchema"]["properties"]["limit"]["default"]
        == limits.LIST_LIMIT_DEFAULT
    )
    listing = openapi["paths"]["/api/channels/{slug}/documents"]["get"]
    limit = next(p for p in listing["parameters"] if p["name"] == "limit")
    assert limit["schema"]["default"] == limits.LIST_LIMIT_DEFAULT

    title_length = Document._meta.get_field("title").max_length
    form_title = DocumentMetadataForm.base_fields["title"]
    assert form_title.max_length == title_length
    upload = openapi["paths"]["/api/channels/{slug}/documents"]["post"]
    body = upload["requestBody"]["content"]["multipart/form-data"]["schema"]
    assert resolve(openapi, body)["properties"]["title"]["maxLength"] == title_length
    assert limits.clip("t" * (title_length + 9), Document, "title") == "t" * (
        title_length
    )


def test_no_door_writes_a_limit_as_a_number():
    """Tool arguments, REST schemas and forms name their bounds (limits, model
    fields, settings): a number written there is a second copy that drifts."""
    offenders = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in DOORS
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if LITERAL_BOUND.search(line)
    ]
    assert offenders == []
