"""Issue 19's findings at registration and the token endpoint: redirect URIs
checked after the library's parsing, whatever the source; only the code flow
registered or served; no client management; a replayed code revokes its
tokens; registrations, issued tokens and replays in the audit trail."""

import json

import pytest
from django.test import Client
from oauth2_provider.models import get_application_model

from documents.models import AuditEvent
from mcp_endpoint.tests.conftest import McpClient
from signin.tests.test_cimd import CLIENT_URL, DocumentFetcher
from signin.tests.test_flow import (
    BASE,
    REDIRECT,
    authorize,
    register,
)

pytestmark = pytest.mark.django_db


def post_registration(body, **extra):
    return Client(**extra).post(
        "/oauth/register/", json.dumps(body), content_type="application/json"
    )


@pytest.mark.parametrize(
    "redirect_uris",
    [
        ["https://ok.example http://evil.example"],
        ["https://ok.example\thttp://evil.example"],
        [" https://ok.example"],
        ["http://evil.example/cb"],
        ["https://ok.example/cb", "javascript:alert(1)"],
        ["https://"],
    ],
)
def test_registration_checks_each_redirect_uri_as_the_library_stores_it(
    redirect_uris,
):
    answer = post_registration({"client_name": "x", "redirect_uris": redirect_uris})
    assert answer.status_code == 400, answer.content
    assert answer.json()["error"] == "invalid_redirect_uri"
    assert not get_application_model().objects.exists()


@pytest.mark.parametrize(
    "metadata",
    [
        {"grant_types": ["client_credentials"]},
        {"grant_types": ["implicit"]},
        {"grant_types": ["password"]},
        {"grant_types": ["urn:ietf:params:oauth:grant-type:device_code"]},
        {"grant_types": ["authorization_code", "client_credentials"]},
        {"response_types": ["token"]},
    ],
)
def test_registration_takes_the_code_flow_only(metadata):
    answer = post_registration(
        {"client_name": "x", "redirect_uris": [REDIRECT], **metadata}
    )
    assert answer.status_code == 400, answer.content
    assert answer.json()["error"] == "invalid_client_metadata"


def test_registration_is_audited_and_hands_out_no_management_token():
    """RFC 7592 management is off: the answer has no registration token or
    URI, and PUT/GET/DELETE on /oauth/register/<id>/ answer 404 (the client
    can't be renamed or sent elsewhere after people consented)."""
    answer = post_registration(
        {"client_name": "Mine", "redirect_uris": [REDIRECT]}, REMOTE_ADDR="10.1.2.3"
    )
    assert answer.status_code == 201
    app = answer.json()
    assert "registration_access_token" not in app
    assert "registration_client_uri" not in app
    event = AuditEvent.objects.get(action="client.register")
    assert event.client_address == "10.1.2.3" and "Mine" in event.actor
    url = f"/oauth/register/{app['client_id']}/"
    body = json.dumps({"client_name": "Bank", "redirect_uris": ["https://x.example"]})
    for method in ("GET", "PUT", "DELETE"):
        response = Client().generic(
            method,
            url,
            body,
            content_type="application/json",
            headers={"Authorization": "Bearer anything"},
        )
        assert response.status_code == 404, (method, response.content)
    assert get_application_model().objects.get().name == "Mine"


def test_a_stored_client_that_breaks_the_rules_signs_nobody_in(client, reader):
    """However a client came to hold an http redirect or another grant type
    (an admin edit, an older registration), the authorization and token
    endpoints treat it as unknown."""
    app = register(Client())
    client.force_login(reader)
    applications = get_application_model().objects.filter(client_id=app["client_id"])
    applications.update(redirect_uris=f"{REDIRECT} http://evil.example/cb")
    page, _ = authorize(client, app["client_id"], resource=f"{BASE}/mcp/demo")
    assert page.status_code == 400
    applications.update(
        redirect_uris=REDIRECT, authorization_grant_type="client-credentials"
    )
    page, _ = authorize(client, app["client_id"], resource=f"{BASE}/mcp/demo")
    assert page.status_code == 400
    token = Client().post(
        "/oauth/token/",
        {
            "grant_type": "authorization_code",
            "code": "x",
            "client_id": app["client_id"],
        },
    )
    assert token.status_code in (400, 401) and token.json()["error"] == "invalid_client"


@pytest.mark.parametrize(
    "grant_type",
    [
        "client_credentials",
        "password",
        "implicit",
        "urn:ietf:params:oauth:grant-type:device_code",
        "",
    ],
)
def test_the_token_endpoint_serves_code_and_refresh_only(grant_type):
    app = get_application_model().objects.create(
        name="old",
        client_type="confidential",
        authorization_grant_type="client-credentials",
        client_secret="s3cret",
    )
    answer = Client().post(
        "/oauth/token/",
        {
            "grant_type": grant_type,
            "client_id": app.client_id,
            "client_secret": "s3cret",
            "username": "rita",
            "password": "pw",
        },
    )
    assert answer.status_code == 400
    assert answer.json()["error"] == "unsupported_grant_type"


@pytest.fixture
def fetcher_with_bad_documents(fetcher):
    bad = {
        **DocumentFetcher.documents[CLIENT_URL],
        "client_id": "https://client.example/bad.json",
        "redirect_uris": ["https://ok.example/cb http://evil.example/cb"],
    }
    implicit = {
        **DocumentFetcher.documents[CLIENT_URL],
        "client_id": "https://client.example/implicit.json",
        "grant_types": ["implicit"],
    }
    DocumentFetcher.documents = {
        **DocumentFetcher.documents,
        bad["client_id"]: bad,
        implicit["client_id"]: implicit,
    }
    yield
    DocumentFetcher.documents.pop(bad["client_id"])
    DocumentFetcher.documents.pop(implicit["client_id"])


@pytest.mark.parametrize("name", ["bad", "implicit"])
def test_a_metadata_document_gets_the_same_rules(
    client, reader, fetcher_with_bad_documents, name
):
    client.force_login(reader)
    page, _ = authorize(
        client, f"https://client.example/{name}.json", resource=f"{BASE}/mcp/demo"
    )
    assert page.status_code == 400


def exchange(app, code, verifier):
    return Client().post(
        "/oauth/token/",
        {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT,
            "client_id": app["client_id"],
            "code_verifier": verifier,
            "resource": f"{BASE}/mcp/demo",
        },
        REMOTE_ADDR="10.5.5.5",
    )


def code_for(client, app):
    page, verifier = authorize(client, app["client_id"], resource=f"{BASE}/mcp/demo")
    form = page.context["form"]
    data = {name: form[name].value() or "" for name in form.fields}
    answer = client.post("/oauth/authorize/", {**data, "allow": "Allow"})
    location = answer["Location"]
    return location.split("code=")[1].split("&")[0], verifier


def test_a_replayed_code_revokes_the_tokens_it_produced(client, reader):
    """RFC 6749 section 4.1.2: the second exchange is refused, and the access
    and refresh tokens of the first stop working (including ones rotated
    since); the replay and the issuances are audited with the address."""
    app = register(Client())
    client.force_login(reader)
    code, verifier = code_for(client, app)
    first = exchange(app, code, verifier)
    assert first.status_code == 200
    tokens = first.json()
    assert (
        McpClient("demo", tokens["access_token"]).send("tools/list").status_code == 200
    )
    rotated = Client().post(
        "/oauth/token/",
        {
            "grant_type": "refresh_token",
            "refresh_token": tokens["refresh_token"],
            "client_id": app["client_id"],
        },
    )
    assert rotated.status_code == 200
    fresh = rotated.json()
    replay = exchange(app, code, verifier)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    for token in (tokens["access_token"], fresh["access_token"]):
        assert McpClient("demo", token).send("tools/list").status_code == 401
    again = Client().post(
        "/oauth/token/",
        {
            "grant_type": "refresh_token",
            "refresh_token": fresh["refresh_token"],
            "client_id": app["client_id"],
        },
    )
    assert again.status_code == 400
    issued = AuditEvent.objects.filter(action="token.issue").order_by("at", "id")
    assert [e.detail.split(";")[0] for e in issued] == [
        "authorization_code",
        "refresh_token",
    ]
    assert issued[0].client_address == "10.5.5.5" and issued[0].user == reader
    assert [e.channel_slug for e in issued] == ["demo", "demo"]
    reuse = AuditEvent.objects.filter(action="token.reuse").order_by("at", "id")
    assert [e.outcome for e in reuse] == ["refused", "refused"]
    assert "code was used twice" in reuse[0].detail
    assert reuse[0].client_address == "10.5.5.5" and reuse[0].user == reader


def test_a_reused_refresh_token_is_audited(client, reader):
    app = register(Client())
    client.force_login(reader)
    code, verifier = code_for(client, app)
    tokens = exchange(app, code, verifier).json()

    def refresh():
        return Client(REMOTE_ADDR="10.6.6.6").post(
            "/oauth/token/",
            {
                "grant_type": "refresh_token",
                "refresh_token": tokens["refresh_token"],
                "client_id": app["client_id"],
            },
        )

    assert refresh().status_code == 200
    assert refresh().status_code == 400
    event = AuditEvent.objects.get(action="token.reuse")
    assert (event.user, event.client_address) == (reader, "10.6.6.6")
    assert "refresh token" in event.detail
