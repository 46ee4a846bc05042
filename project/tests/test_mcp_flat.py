"""The MCP endpoint's flat path (project.mcp_asgi, MCP_FLAT_PATH) answers as
Django's whole handler does (issue 26).

Each case is one ASGI conversation sent through the whole application
(project.asgi: body limits, forwarded headers, request threads; built after
the case's settings, which the middleware reads when built) twice, once
with the flat path and once with MCP_FLAT_PATH off (Django's ASGIHandler, its
signals, spooled body and middleware chain), each with a fresh key of its
own; every message sent back (status, headers in order, body chunks) must be
the same.
"""

import asyncio
import json

import pytest
from asgiref.sync import async_to_sync
from django.core.handlers.base import BaseHandler
from django.utils.deprecation import MiddlewareMixin

from documents.access import COMMAND_LINE
from documents.services.keys import create_api_key
from project import middleware
from project.asgi import build_application

pytestmark = pytest.mark.django_db(transaction=True)
LEGACY = "2025-11-25"


class Stamp(MiddlewareMixin):
    """A deployment's own middleware, which only the chain can apply."""

    def process_response(self, request, response):
        response["X-Stamp"] = "chain"
        return response


def rpc(method: str, params: dict | None = None, request_id: int = 1) -> bytes:
    message = {"jsonrpc": "2.0", "id": request_id, "method": method}
    return json.dumps({**message, "params": params or {}}).encode()


LISTING = rpc("tools/list")
PING = rpc("ping")
CALL = rpc("tools/call", {"name": "list_documents", "arguments": {}})


class Conversation:
    """One request as a server hands it to the application: `pieces` of body
    (after `pause` seconds each), then the client waits for the answer and
    hangs up, or hangs up at once (`hang_up`); an `unfinished` body is never
    ended."""

    def __init__(
        self,
        path: str,
        headers: list[tuple[str, str]],
        pieces: list[bytes],
        *,
        method: str = "POST",
        scheme: str = "http",
        pause: float = 0.0,
        hang_up: bool = False,
        unfinished: bool = False,
        client: str = "127.0.0.1",
    ):
        self.unfinished = unfinished
        self.path, self.headers, self.pieces = path, headers, list(pieces)
        self.method, self.scheme, self.pause = method, scheme, pause
        self.hang_up, self.client = hang_up, client
        self.messages: list[dict] = []

    def scope(self) -> dict:
        return {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": self.method,
            "scheme": self.scheme,
            "path": self.path,
            "raw_path": self.path.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": [
                (name.lower().encode(), value.encode()) for name, value in self.headers
            ],
            "client": (self.client, 50000),
            "server": ("127.0.0.1", 8000),
        }

    async def run(self, application=None) -> list[dict]:
        if application is None:
            from project.asgi import application

        answered = asyncio.Event()
        pieces = list(self.pieces)

        async def receive():
            if pieces:
                if self.pause:
                    await asyncio.sleep(self.pause)
                body = pieces.pop(0)
                more = bool(pieces) or self.unfinished
                return {"type": "http.request", "body": body, "more_body": more}
            if not self.hang_up:
                await answered.wait()
            return {"type": "http.disconnect"}

        async def send(message):
            self.messages.append(message)
            if message["type"] == "http.response.body" and not message.get(
                "more_body", False
            ):
                answered.set()

        await application(self.scope(), receive, send)
        return self.messages


def mcp_headers(key: str | None, length: int | None, **extra: str):
    headers = [
        ("Host", "127.0.0.1"),
        ("Content-Type", "application/json"),
        ("Accept", "application/json"),
        ("MCP-Protocol-Version", LEGACY),
    ]
    if key is not None:
        headers.append(("Authorization", f"Bearer {key}"))
    if length is not None:
        headers.append(("Content-Length", str(length)))
    replaced = {name.lower().replace("_", "-") for name in extra}
    headers = [(name, value) for name, value in headers if name.lower() not in replaced]
    return headers + [(name.replace("_", "-"), value) for name, value in extra.items()]


def call(key, body: bytes = LISTING, *, path="/mcp/demo", announce=True, **options):
    """A conversation sending `body` with `key` (None: no key)."""
    extra = options.pop("headers", {})
    headers = mcp_headers(key, len(body) if announce else None, **extra)
    return Conversation(path, headers, [body], **options)


def pieces(key, body: bytes, size: int, **options):
    chunks = [body[i : i + size] for i in range(0, len(body), size)]
    headers = mcp_headers(key, None, Transfer_Encoding="chunked")
    return Conversation("/mcp/demo", headers, chunks, **options)


# name: (conversation from a key, settings, expected status or None for no answer)
CASES = {
    "tools/list": (lambda key: call(key), {}, 200),
    "tools/list, SSE accepted": (
        lambda key: call(
            key, headers={"Accept": "application/json, text/event-stream"}
        ),
        {},
        200,
    ),
    "ping": (lambda key: call(key, PING), {}, 200),
    "a tool call": (lambda key: call(key, CALL), {}, 200),
    "no key": (lambda key: call(None), {}, 401),
    "an unknown key": (
        lambda key: call("qk_unknown-key-of-some-length-000000"),
        {},
        401,
    ),
    "a key for another channel": (lambda key: call(key, path="/mcp/other"), {}, 403),
    "no such channel": (lambda key: call(key, path="/mcp/nowhere"), {}, 404),
    "an origin refused": (
        lambda key: call(key, headers={"Origin": "http://evil.example"}),
        {},
        403,
    ),
    "too large, declared": (
        lambda key: call(key, b" " * 3000 + LISTING),
        {"MCP_MAX_BODY_BYTES": 2048},
        413,
    ),
    "too large, streamed": (
        lambda key: pieces(key, b" " * 3000 + LISTING, 1000),
        {"MCP_MAX_BODY_BYTES": 2048},
        413,
    ),
    "rate limited": ("rate limited", {"MCP_RATE_LIMIT_PER_MINUTE": 1}, 429),
    "bad JSON": (
        lambda key: call(key, b'{"jsonrpc": "2.0", "id": 1, "method":'),
        {},
        400,
    ),
    "not JSON-RPC": (lambda key: call(key, b"[]"), {}, 400),
    "a method that isn't a string": (
        lambda key: call(key, b'{"jsonrpc": "2.0", "id": 1, "method": ["tools/list"]}'),
        {},
        400,
    ),
    "GET": (lambda key: call(key, b"", method="GET", announce=False), {}, 405),
    "PUT with a body": (lambda key: call(key, method="PUT"), {}, 405),
    "DELETE": (lambda key: call(key, b"", method="DELETE", announce=False), {}, 405),
    "no Content-Length": (lambda key: call(key, announce=False), {}, 200),
    "a wrong content type": (
        lambda key: call(key, headers={"Content-Type": "text/plain"}),
        {},
        415,
    ),
    "not accepting JSON": (
        lambda key: call(key, headers={"Accept": "text/html"}),
        {},
        406,
    ),
    "a slow body": (lambda key: pieces(key, LISTING, 7, pause=0.02), {}, 200),
    "a client gone during the body": (
        lambda key: pieces(key, LISTING, 7, hang_up=True, unfinished=True),
        {},
        None,
    ),
    "an unknown host": (
        lambda key: call(key, headers={"Host": "evil.example"}),
        {},
        400,
    ),
    "HSTS over TLS": (
        lambda key: call(key, scheme="https"),
        {"SECURE_HSTS_SECONDS": 3600, "SECURE_HSTS_PRELOAD": True},
        200,
    ),
    "an SSL redirect": (lambda key: call(key), {"SECURE_SSL_REDIRECT": True}, 301),
    "a refused user agent": (
        lambda key: call(key, headers={"User-Agent": "BadBot/1.0"}),
        {"DISALLOWED_USER_AGENTS": [__import__("re").compile("BadBot")]},
        403,
    ),
    "a middleware the flat path can't apply": (
        lambda key: call(key),
        {"MIDDLEWARE": "+project.tests.test_mcp_flat.Stamp"},
        200,
    ),
}


@pytest.fixture
def channels(make_channel):
    demo = make_channel("demo")
    make_channel("other")
    return demo


def fresh_key(channel) -> str:
    return create_api_key(actor=COMMAND_LINE, name="agent", channels=[channel]).raw_key


def answer(case: str, channel, flat: bool, settings) -> list[dict]:
    conversation, overrides, _ = CASES[case]
    for name, value in overrides.items():
        if name == "MIDDLEWARE":
            value = [*settings.MIDDLEWARE, value[1:]]
        setattr(settings, name, value)
    settings.MCP_FLAT_PATH = flat
    key = fresh_key(channel)
    client = "10.0.0.1" if flat else "10.0.0.2"  # failed sign-ins counted apart
    application = build_application()
    if conversation == "rate limited":
        first = call(key, client=client)
        async_to_sync(first.run)(application)
        assert first.messages[0]["status"] == 200
        conversation = call
    sent = conversation(key)
    sent.client = client
    return async_to_sync(sent.run)(application)


@pytest.mark.parametrize("case", CASES)
def test_the_flat_path_answers_as_djangos_handler(
    case, channels, settings, steady_rate_window
):
    """Status, headers (names, values, order) and body bytes, message by
    message, are the same through the flat path and Django's whole handler."""
    expected = CASES[case][2]
    flat = answer(case, channels, True, settings)
    django = answer(case, channels, False, settings)
    if expected is None:
        assert flat == [] and django == []
        return
    assert flat[0]["status"] == expected, flat
    assert flat == django
    if "MIDDLEWARE" in CASES[case][1]:  # it ran both ways (the chain, then)
        assert dict(flat[0]["headers"])[b"X-Stamp"] == b"chain"
    if "HSTS" in case:
        assert b"Strict-Transport-Security" in dict(flat[0]["headers"])


def test_the_flat_path_does_not_walk_the_middleware_chain(
    channels, settings, monkeypatch
):
    """A tools/list through the flat path never enters Django's chain (which
    this test breaks); with MCP_FLAT_PATH off, the same request does."""

    async def broken(self, request):
        raise AssertionError("the middleware chain was walked")

    monkeypatch.setattr(BaseHandler, "get_response_async", broken)
    key = fresh_key(channels)
    messages = async_to_sync(call(key).run)()
    assert messages[0]["status"] == 200
    assert b'"tools"' in messages[1]["body"]
    settings.MCP_FLAT_PATH = False
    with pytest.raises(AssertionError, match="chain was walked"):
        async_to_sync(call(key).run)()


def test_the_hooks_are_the_middlewares_own(settings):
    """The flat path's layers are the middleware settings names, in order,
    minus those that pass a machine request straight through; a middleware it
    can't apply without the chain turns it off."""
    hooks = middleware.build_machine_hooks()
    owners = [type(hook.__self__).__name__ for hook, _ in hooks.layers if hook] + [
        type(hook.__self__).__name__ for _, hook in hooks.layers if hook
    ]
    assert set(owners) == {
        "PublicCorsMiddleware",
        "SecurityMiddleware",
        "CommonMiddleware",
        "XFrameOptionsMiddleware",
        "ContentSecurityPolicyMiddleware",
        "OAuthParametersMiddleware",
    }
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, "project.tests.test_mcp_flat.Stamp"]
    assert middleware.build_machine_hooks() is None
    settings.MIDDLEWARE = settings.MIDDLEWARE[:-1]
    assert middleware.build_machine_hooks() is not None
