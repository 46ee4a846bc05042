"""Hostile input on every /oauth/ path (register, register/<id>, token,
authorize, revoke, the metadata document): malformed and nested JSON, wrong
types, huge values, NUL bytes and lone surrogates, unknown Host headers, other
methods. Whatever arrives, the answer is never a 5xx, and registration still
works afterwards."""

import json

import pytest
from django.test import Client
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from signin.tests.test_flow import BASE, REDIRECT, register

pytestmark = pytest.mark.django_db

PATHS = [
    "/oauth/register/",
    "/oauth/register/some-client/",
    "/oauth/register/\x00/",
    "/oauth/token/",
    "/oauth/revoke/",
    "/oauth/authorize/",
    "/.well-known/oauth-authorization-server",
]
NASTY = [
    "",
    "\x00",
    "x" * 70_000,
    "💥" * 100,
    "' OR 1=1 --",
    "http://evil.example",
    "https://ok.example http://evil.example",
    "javascript:alert(1)",
]
NASTY_JSON = [
    b"{",
    b"[]",
    b"null",
    b'"text"',
    b"1e999999",
    b"[" * 100_000 + b"]" * 100_000,
    b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    b"\xff\xfe\x00",
    json.dumps({"redirect_uris": "https://ok.example"}).encode(),
    json.dumps({"redirect_uris": [1, None, {"a": 1}]}).encode(),
    json.dumps(
        {"redirect_uris": [REDIRECT], "grant_types": "authorization_code"}
    ).encode(),
    json.dumps({"redirect_uris": [REDIRECT], "grant_types": [None]}).encode(),
    json.dumps({"redirect_uris": [REDIRECT], "response_types": {"a": 1}}).encode(),
    json.dumps({"redirect_uris": [REDIRECT], "client_name": ["x"]}).encode(),
    json.dumps({"redirect_uris": [REDIRECT], "client_name": "x" * 100_000}).encode(),
    json.dumps(
        {"redirect_uris": [REDIRECT], "token_endpoint_auth_method": ["none"]}
    ).encode(),
    json.dumps({"redirect_uris": ["\ud800"]}, ensure_ascii=True).encode(),
    json.dumps({"redirect_uris": ["https://" + "a" * 70_000]}).encode(),
]
FORMS = [
    {"grant_type": "authorization_code"},
    {"grant_type": "authorization_code", "code": "\x00", "client_id": "\x00"},
    {"grant_type": "refresh_token", "refresh_token": "\u202e", "client_id": "x"},
    {"grant_type": "urn:ietf:params:oauth:grant-type:device_code"},
    {"grant_type": ["authorization_code", "refresh_token"]},
    {"token": "\x00", "token_type_hint": "refresh_token"},
    {"token": "x" * 70_000, "client_id": "x" * 70_000},
    {"response_type": "code", "client_id": "\x00", "redirect_uri": "\x00"},
    {"allow": "Allow", "client_id": "nope", "resource": "\x00", "scope": "\x00"},
    {"resource": ["a", "b"], "scope": "read write admin"},
]
HOSTILE_SETTINGS = hypothesis_settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=60,
    suppress_health_check=list(HealthCheck),
)


def clients_for(clients, path: str):
    """Both clients where being signed in changes the path's answer (the
    authorization endpoint), the anonymous one elsewhere."""
    return clients if path == "/oauth/authorize/" else clients[:1]


def no_5xx(response, what) -> None:
    assert response.status_code < 500, (what, response.status_code, response.content)


@pytest.fixture
def clients(channels, reader):
    """An anonymous client and a signed-in one (the authorize and consent
    paths behave differently for each); neither raises, so a 500 shows."""
    anonymous = Client(raise_request_exception=False)
    signed_in = Client(raise_request_exception=False)
    signed_in.force_login(reader)
    return anonymous, signed_in


@pytest.mark.parametrize("path", PATHS)
def test_malformed_bodies_get_no_5xx(clients, path):
    for client in clients_for(clients, path):
        for body in NASTY_JSON:
            for content_type in ("application/json", "text/plain"):
                for method in ("POST", "PUT"):
                    response = client.generic(
                        method, path, body, content_type=content_type
                    )
                    no_5xx(response, (method, path, body[:40], content_type))
        for form in FORMS:
            no_5xx(client.post(path, form), (path, form))
            no_5xx(client.get(path, form), (path, form))
        for method in ("DELETE", "PATCH", "OPTIONS", "HEAD"):
            no_5xx(client.generic(method, path), (method, path))


@pytest.mark.parametrize("path", PATHS)
def test_unknown_hosts_get_no_5xx(clients, path):
    for client in clients_for(clients, path):
        for host in ("evil.example", "a" * 300, "[::1", "127.0.0.1:99999", "\x00"):
            response = client.post(
                path,
                json.dumps({"redirect_uris": [REDIRECT]}),
                content_type="application/json",
                headers={"Host": host},
            )
            no_5xx(response, (path, host))
            no_5xx(client.get(path, headers={"Host": host}), (path, host))


@pytest.mark.parametrize("value", NASTY)
def test_nasty_values_in_every_parameter_get_no_5xx(clients, value):
    parameters = [
        "response_type",
        "client_id",
        "redirect_uri",
        "scope",
        "state",
        "resource",
        "code_challenge",
        "code_challenge_method",
        "approval_prompt",
        "prompt",
        "grant_type",
        "code",
        "refresh_token",
        "token",
    ]
    app = register(Client())
    base = {
        "response_type": "code",
        "client_id": app["client_id"],
        "redirect_uri": REDIRECT,
        "scope": "read",
        "resource": f"{BASE}/mcp/demo",
        "code_challenge": "x" * 43,
        "code_challenge_method": "S256",
    }
    for client in clients:
        for name in parameters:
            data = {**base, name: value}
            for path in ("/oauth/authorize/", "/oauth/token/", "/oauth/revoke/"):
                no_5xx(client.get(path, data), (path, name))
                no_5xx(client.post(path, data), (path, name))


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True)
    | st.text(max_size=40)
    | st.sampled_from(NASTY),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)
metadata = st.fixed_dictionaries(
    {},
    optional={
        "client_name": json_values,
        "redirect_uris": json_values | st.lists(st.sampled_from(NASTY + [REDIRECT])),
        "grant_types": json_values,
        "response_types": json_values,
        "token_endpoint_auth_method": json_values,
        "scope": json_values,
        "client_uri": json_values,
    },
)


@HOSTILE_SETTINGS
@given(body=metadata)
def test_generated_registrations_get_no_5xx(settings, body):
    settings.OAUTH_REGISTRATIONS_PER_HOUR = 10_000
    response = Client(raise_request_exception=False, REMOTE_ADDR="10.66.0.1").post(
        "/oauth/register/", json.dumps(body), content_type="application/json"
    )
    no_5xx(response, body)
    assert response.status_code in (201, 400, 429), response.content
    if response.status_code == 201:
        uris = response.json()["redirect_uris"]
        assert all(uri == REDIRECT or uri.startswith("https://") for uri in uris)


@pytest.mark.parametrize("path", PATHS)
def test_undecodable_query_and_form_bytes_get_no_5xx(clients, path):
    """Percent-escapes that decode to no text (a lone surrogate, 0xFF)."""
    raw = "client_id=%ED%A0%80&grant_type=%FF&redirect_uri=%C0%AF&code=%00"
    for client in clients:
        no_5xx(client.get(path, QUERY_STRING=raw), (path, raw))
        response = client.generic(
            "POST", path, raw, content_type="application/x-www-form-urlencoded"
        )
        no_5xx(response, (path, raw))


def test_registration_still_works_afterwards(clients):
    assert register(Client())["client_id"]
