"""Protocol fuzzing: generated and mutated MCP messages in both eras.

10,400 requests in all (valid calls mutated: wrong types, huge values,
odd unicode, missing and duplicated headers, invalid JSON, batches, other HTTP
methods). Whatever arrives, the endpoint answers without a 5xx, with a
well-formed JSON-RPC result or error (or an empty 202 for a notification, 405
for a method other than POST), and still serves a normal call afterwards.
"""

import base64
import json

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from mcp_endpoint.tests.conftest import LEGACY, MODERN, McpClient, doc_id
from mcp_endpoint.tests.rawclient import RawClient, check_reply

pytestmark = pytest.mark.django_db

PATH = "/mcp/handbook"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
FUZZ_SETTINGS = hypothesis_settings(
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=list(HealthCheck),
)

NASTY_STRINGS = [
    "",
    " ",
    "\x00",
    "\ud800",
    "\udfff\ud800",
    "\u202e\u0644\u0627",
    "💥" * 50,
    "' OR 1=1 --",
    '"); DROP TABLE documents_document; --',
    "%s%s%s",
    "{0.__class__}",
    "../../../../etc/passwd",
    "<script>alert(1)</script>",
    "x" * 70_000,
    "1,,2",
    "documents://metadata/1",
    "=?base64?bm90IGJhc2U2NA==?=",
    "=?base64?!!!?=",
    "tools/call",
    "2026-07-28",
    "2025-11-25",
]
NASTY_NUMBERS = [0, -1, 1, 2**31, 2**63, -(2**63) - 1, 2**200, 1e308, -0.0, 0.5]

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from(NASTY_NUMBERS)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30)
    | st.sampled_from(NASTY_STRINGS)
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.text(max_size=12) | st.sampled_from(NASTY_STRINGS), children, max_size=4
        )
    ),
    max_leaves=12,
)


def valid_calls(document_id: int) -> list[tuple[str, dict]]:
    """One valid call of every method the endpoint serves (era-independent part)."""
    return [
        (
            "initialize",
            {
                "protocolVersion": LEGACY,
                "capabilities": {},
                "clientInfo": {"name": "f", "version": "1"},
            },
        ),
        ("ping", {}),
        ("logging/setLevel", {"level": "debug"}),
        ("server/discover", {}),
        ("tools/list", {}),
        ("tools/list", {"cursor": ""}),
        ("resources/list", {}),
        ("resources/templates/list", {}),
        ("resources/read", {"uri": "index://stats"}),
        ("resources/read", {"uri": f"documents://metadata/{document_id}"}),
        ("prompts/list", {}),
        ("prompts/get", {"name": "nothing", "arguments": {}}),
        (
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "x"},
                "argument": {"name": "a", "value": ""},
            },
        ),
        ("notifications/initialized", {}),
        (
            "tools/call",
            {
                "name": "list_documents",
                "arguments": {"metadata_filter": {"topic": "holidays"}, "limit": 2},
            },
        ),
        (
            "tools/call",
            {
                "name": "list_documents",
                "arguments": {"metadata_filter": {"year": {"min": 2020}}, "offset": 1},
            },
        ),
        (
            "tools/call",
            {
                "name": "get_pages",
                "arguments": {
                    "document_id": document_id,
                    "page_start": 1,
                    "page_end": 2,
                    "type": "both",
                },
            },
        ),
        (
            "tools/call",
            {
                "name": "get_citation_url",
                "arguments": {"document_ids": [document_id], "page_number": 1},
            },
        ),
        (
            "tools/call",
            {
                "name": "retrieve_text_chunks",
                "arguments": {"query": "holiday days", "limit": 3},
            },
        ),
        (
            "tools/call",
            {
                "name": "retrieve_text_chunks",
                "arguments": {
                    "query": "expenses",
                    "metadata_filter": {"topic": ["expenses", "holidays"]},
                },
            },
        ),
        (
            "tools/call",
            {
                "name": "rag_search",
                "arguments": {
                    "query": "How many holiday days?",
                    "document_ids": [document_id],
                },
            },
        ),
        (
            "tools/call",
            {
                "name": "submit_feedback",
                "arguments": {"query": "q", "answer": "a", "score": 4, "comment": "ok"},
            },
        ),
    ]


def _paths(value, prefix=()):
    """Every (path, container) in a JSON value, for picking a mutation target."""
    if isinstance(value, dict):
        for key, child in value.items():
            yield (*prefix, key)
            yield from _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield (*prefix, index)
            yield from _paths(child, (*prefix, index))


def _parent(message, path):
    for key in path[:-1]:
        message = message[key]
    return message


def mutate_message(data, message: dict) -> dict:
    """Zero to three edits: replace, delete or add a value anywhere in the message."""
    for _ in range(data.draw(st.integers(0, 3), label="edits")):
        paths = list(_paths(message))
        action = data.draw(
            st.sampled_from(["replace", "delete", "add", "method", "id"])
        )
        if action == "method":
            message["method"] = data.draw(
                st.sampled_from([m for m, _ in valid_calls(1)]) | json_values
            )
        elif action == "id":
            message["id"] = data.draw(json_values)
        elif action == "add" or not paths:
            targets = [()] + [p for p in paths if isinstance(_get(message, p), dict)]
            target = data.draw(st.sampled_from(targets))
            key = data.draw(
                st.text(max_size=10)
                | st.sampled_from(
                    ["_meta", "arguments", "id", "params", "name", "uri", "cursor"]
                )
            )
            _get(message, target)[key] = data.draw(json_values)
        else:
            path = data.draw(st.sampled_from(paths))
            parent = _parent(message, path)
            if action == "delete":
                del parent[path[-1]]
            else:
                parent[path[-1]] = data.draw(json_values)
    return message


def _get(value, path):
    for key in path:
        value = value[key]
    return value


def base_headers(key: str, era: str, method, name) -> list[tuple[str, str]]:
    headers = [
        ("accept", "application/json, text/event-stream"),
        ("content-type", "application/json"),
        ("authorization", f"Bearer {key}"),
    ]
    if era == "modern":
        headers.append(("mcp-protocol-version", MODERN))
        if isinstance(method, str):
            headers.append(("mcp-method", method))
        if isinstance(name, str):
            encoded = base64.b64encode(name.encode("utf-8", "surrogatepass")).decode()
            headers.append(("mcp-name", f"=?base64?{encoded}?="))
    elif method != "initialize":
        headers.append(("mcp-protocol-version", LEGACY))
    return headers


header_values = st.text(
    st.characters(min_codepoint=32, max_codepoint=255), max_size=40
) | st.sampled_from(
    [
        "2026-07-28",
        "2025-11-25",
        "2024-11-05",
        "1999-01-01",
        "",
        "tools/call",
        "Bearer",
        "=?base64?x?=",
    ]
)
header_names = st.sampled_from(
    [
        "mcp-protocol-version",
        "mcp-method",
        "mcp-name",
        "mcp-param-query",
        "accept",
        "content-type",
        "authorization",
        "api-key",
        "origin",
        "content-length",
        "mcp-session-id",
        "last-event-id",
    ]
)


def mutate_headers(data, headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Zero to three edits: drop, duplicate (same or other value), set or add."""
    for _ in range(data.draw(st.integers(0, 3), label="header edits")):
        action = data.draw(st.sampled_from(["drop", "duplicate", "set", "add"]))
        if action in ("drop", "duplicate", "set") and headers:
            index = data.draw(st.integers(0, len(headers) - 1))
            name, value = headers[index]
            if action == "drop":
                del headers[index]
            elif action == "duplicate":
                other = data.draw(st.just(value) | header_values)
                headers.insert(data.draw(st.integers(0, len(headers))), (name, other))
            else:
                headers[index] = (name, data.draw(header_values))
        else:
            headers.append((data.draw(header_names), data.draw(header_values)))
    return headers


def encode_body(data, message) -> tuple[bytes, bool]:
    """The message as JSON, sometimes spoiled: batched, truncated, padded,
    re-encoded, or replaced by junk; and whether it is still the message."""
    form = data.draw(
        st.sampled_from(
            ["json"] * 6 + ["batch", "truncated", "junk", "latin1", "empty", "nan"]
        ),
        label="body form",
    )
    text = json.dumps(message)
    if form == "batch":
        count = data.draw(st.integers(0, 3))
        return json.dumps([message] * count).encode(), False
    if form == "truncated":
        cut = data.draw(st.integers(0, max(0, len(text) - 1)))
        return text[:cut].encode("utf-8", "surrogatepass"), False
    if form == "junk":
        return data.draw(st.binary(max_size=200)), False
    if form == "latin1":
        return json.dumps(message, ensure_ascii=False).encode(
            "latin-1", "replace"
        ), False
    if form == "empty":
        return b"", False
    if form == "nan":
        return text.replace("1", "NaN", 1).encode("utf-8", "surrogatepass"), False
    return text.encode("utf-8", "surrogatepass"), True


class Fuzzer:
    """Builds and sends one mutated request per hypothesis example."""

    def __init__(self, key: str, document_id: int):
        self.key = key
        self.calls = valid_calls(document_id)
        self.client = RawClient()
        self.sent = 0
        self.statuses: dict[int, int] = {}

    def message(self, data, era: str) -> dict:
        method, params = data.draw(st.sampled_from(self.calls), label="call")
        params = json.loads(json.dumps(params))
        if era == "modern":
            params["_meta"] = {
                META_VERSION: MODERN,
                META_CAPABILITIES: {},
                "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "1"},
            }
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        if not method.startswith("notifications/"):
            message["id"] = data.draw(
                st.integers(-(2**53), 2**53) | st.text(max_size=8)
            )
        return message

    def send(self, data, era: str, *, mutate_body: bool, mutate_head: bool):
        message = self.message(data, era)
        if mutate_body:
            message = mutate_message(data, message)
        params = message.get("params")
        method = message.get("method")
        name = None
        if isinstance(params, dict):
            name = (
                params.get("uri") if method == "resources/read" else params.get("name")
            )
        headers = base_headers(self.key, era, method, name)
        if mutate_head:
            headers = mutate_headers(data, headers)
        body, exact = (
            encode_body(data, message)
            if mutate_body
            else (json.dumps(message).encode(), True)
        )
        http_method = "POST"
        if mutate_head and data.draw(st.integers(0, 19), label="http method") == 0:
            http_method = data.draw(
                st.sampled_from(["GET", "DELETE", "PUT", "PATCH", "HEAD", "OPTIONS"])
            )
        response = self.client.send(PATH, body, headers, method=http_method)
        self.sent += 1
        self.statuses[response.status_code] = (
            self.statuses.get(response.status_code, 0) + 1
        )
        request_id = message.get("id") if isinstance(message, dict) else None
        if not (
            isinstance(request_id, (int, str)) and not isinstance(request_id, bool)
        ):
            request_id = None
        check_reply(response, request_id, http_method=http_method, check_id=exact)


@pytest.fixture
def fuzzer(handbook, handbook_key, settings):
    settings.MCP_RATE_LIMIT_PER_MINUTE = 0
    # Garbled keys are failed authentications; throttling them (tested in
    # test_limits) would turn the rest of the run into 429s.
    settings.AUTH_FAILURES_PER_MINUTE = 0
    # Small enough that the huge generated values sometimes cross it.
    settings.MCP_MAX_BODY_BYTES = 64 * 1024
    return Fuzzer(handbook_key, doc_id("Holiday policy"))


def assert_still_serving(handbook_key: str) -> None:
    """A normal call in each era succeeds after the fuzzing."""
    for era in ("modern", "legacy"):
        client = McpClient("handbook", handbook_key, era)
        tools = client.result("tools/list")["tools"]
        assert {t["name"] for t in tools} >= {"rag_search", "get_pages"}
        result = client.call_tool_expecting_success(
            "retrieve_text_chunks", {"query": "holiday"}
        )
        assert result["structuredContent"]["chunks"]


def _run(fuzzer, era: str, examples: int, *, mutate_body: bool, mutate_head: bool):
    @hypothesis_settings(FUZZ_SETTINGS, max_examples=examples)
    @given(st.data())
    def run(data):
        fuzzer.send(data, era, mutate_body=mutate_body, mutate_head=mutate_head)

    run()


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_mutated_messages_get_well_formed_answers(fuzzer, handbook_key, era):
    """2,500 mutated messages per era (values replaced by random JSON, keys
    dropped or added, odd ids and methods, batches, truncated or junk bodies):
    every answer is well formed and the server still serves normal calls."""
    _run(fuzzer, era, 2500, mutate_body=True, mutate_head=False)
    assert fuzzer.sent >= 2500
    assert_still_serving(handbook_key)


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_mutated_headers_get_well_formed_answers(fuzzer, handbook_key, era):
    """1,800 valid messages per era with missing, duplicated or garbled headers
    (routing headers, Accept, Content-Type, keys, Content-Length) or another
    HTTP method: every answer is well formed."""
    _run(fuzzer, era, 1800, mutate_body=False, mutate_head=True)
    assert fuzzer.sent >= 1800
    assert_still_serving(handbook_key)


def test_mutated_messages_and_headers_together(fuzzer, handbook_key):
    """900 requests per era with both the message and the headers mutated."""
    for era in ("modern", "legacy"):
        _run(fuzzer, era, 900, mutate_body=True, mutate_head=True)
    assert fuzzer.sent >= 1800
    assert_still_serving(handbook_key)


# --- Hostile shapes: depth, magnitude, size -------------------------------------
#
# Each of these once reached a 5xx or an "internal error" (-32603): JSON nested
# 100,000 deep (RecursionError), ids and offsets past PostgreSQL's bigint, and a
# query of 960 kB of distinct words (over the tsvector size limit). Bad input
# must be refused as bad input: -32700/-32600/-32602, or a tool error.

BAD_INPUT_CODES = {-32700, -32600, -32602}
HUGE_NUMBERS = [2**63, -(2**63) - 1, 2**64, 10**30, 10**400, -(10**400)]


def _nested(depth: int, kind: str) -> str:
    if kind == "list":
        return "[" * depth + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


MODERN_META = json.dumps(
    {
        META_VERSION: MODERN,
        META_CAPABILITIES: {},
        "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "1"},
    }
)


def _message(method: str, params_json: str) -> str:
    """A request whose params are given as JSON text; `_meta` is added for the
    2026-07-28 era by _for_era."""
    return (
        f'{{"jsonrpc": "2.0", "id": 7, "method": "{method}", "params": {params_json}}}'
    )


def _call_body(name: str, arguments_json: str) -> tuple[str, str, str]:
    params = f'{{"name": "{name}", "arguments": {arguments_json}}}'
    return "tools/call", name, params


def _for_era(request, era: str) -> tuple[bytes, list[tuple[str, str]]]:
    """The body and header lines of a hostile request in `era`."""
    headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ]
    if isinstance(request, str):  # a whole body, not a message
        method, name, body = "tools/list", None, request
    else:
        method, name, params = request
        if era == "modern":
            params = params[:-1] + f', "_meta": {MODERN_META}}}'
        body = _message(method, params)
    if era == "modern":
        headers += [("MCP-Protocol-Version", MODERN), ("Mcp-Method", method)]
        if name:
            headers.append(("Mcp-Name", name))
    else:
        headers.append(("MCP-Protocol-Version", LEGACY))
    return body.encode(), headers


@st.composite
def hostile_requests(draw, document_id: int):
    shape = draw(st.sampled_from(["depth", "magnitude", "size"]), label="shape")
    if shape == "depth":
        depth = draw(
            st.sampled_from([33, 64, 500, 1_000, 5_000, 100_000])
            | st.integers(33, 3_000),
            label="depth",
        )
        nested = _nested(depth, draw(st.sampled_from(["list", "object"])))
        where = draw(st.sampled_from(["root", "params", "filter", "argument"]))
        if where == "root":
            return nested
        if where == "params":
            return "tools/list", None, f'{{"cursor": {nested}}}'
        if where == "filter":
            return _call_body(
                "retrieve_text_chunks",
                f'{{"query": "holiday", "metadata_filter": {{"topic": {nested}}}}}',
            )
        return _call_body("list_documents", f'{{"metadata_filter": {nested}}}')
    if shape == "magnitude":
        number = draw(st.sampled_from(HUGE_NUMBERS) | st.integers(2**63, 2**70))
        name, arguments = draw(
            st.sampled_from(
                [
                    ("list_documents", {"offset": number}),
                    ("list_documents", {"limit": number}),
                    ("list_documents", {"metadata_filter": {"year": number}}),
                    ("list_documents", {"metadata_filter": {"year": {"min": number}}}),
                    (
                        "get_pages",
                        {"document_id": number, "page_start": 1, "page_end": 1},
                    ),
                    (
                        "get_pages",
                        {
                            "document_id": document_id,
                            "page_start": number,
                            "page_end": number,
                        },
                    ),
                    ("get_citation_url", {"document_ids": [number]}),
                    ("get_citation_url", {"document_ids": [1], "page_number": number}),
                    ("retrieve_text_chunks", {"query": "x", "document_ids": [number]}),
                    ("retrieve_text_chunks", {"query": "x", "limit": number}),
                ]
            ),
            label="call",
        )
        return _call_body(name, json.dumps(arguments))
    words = draw(st.integers(2_000, 140_000), label="distinct words")
    query = " ".join(f"w{n:x}q" for n in range(words))
    name = draw(st.sampled_from(["retrieve_text_chunks", "rag_search"]))
    return _call_body(name, json.dumps({"query": query}))


def test_hostile_shapes_are_refused_as_bad_input(handbook, handbook_key, settings):
    """300 bodies of extreme depth (to 100,000 levels, at the root, in params, a
    filter or an argument), magnitude (ids, pages, offsets, limits and filter
    numbers past bigint, to 10**400) and size (queries of up to 140,000 distinct
    words, about 1 MB) in both eras: each is answered without a 5xx and refused
    as bad input (-32700, -32600, -32602 or a tool error), never as an internal
    error (a filter on a huge number is answered: nothing matches); normal
    calls still work afterwards."""
    settings.MCP_RATE_LIMIT_PER_MINUTE = 0
    client = RawClient()
    document_id = doc_id("Holiday policy")
    seen: dict[str, int] = {}

    @hypothesis_settings(FUZZ_SETTINGS, max_examples=150)
    @given(st.data())
    def run(data):
        request = data.draw(hostile_requests(document_id), label="request")
        era = data.draw(st.sampled_from(["modern", "legacy"]), label="era")
        body, headers = _for_era(request, era)
        headers.append(("Authorization", f"Bearer {handbook_key}"))
        response = client.send(PATH, body, headers)
        message = check_reply(response, 7, check_id=False)
        assert message is not None
        if "error" in message:
            code = message["error"]["code"]
            assert code in BAD_INPUT_CODES, message["error"]
            seen[f"error {code}"] = seen.get(f"error {code}", 0) + 1
        elif message["result"].get("isError"):
            seen["tool error"] = seen.get("tool error", 0) + 1
        else:
            # Only a filter on a huge number is a fair question (no document
            # matches); every other shape here must be refused.
            assert b'"metadata_filter": {"year"' in body, message["result"]
            seen["answered"] = seen.get("answered", 0) + 1

    run()
    assert sum(seen.values()) >= 150
    assert_still_serving(handbook_key)
