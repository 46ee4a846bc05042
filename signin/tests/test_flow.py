"""The OAuth flow through Django's test client: discovery, registration, the
consent page, tokens bound to one channel and scope, refresh rotation and
revocation (the live-client test drives the same with real clients)."""

import base64
import hashlib
import json
import secrets
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from documents.access import COMMAND_LINE
from documents.models import AuditEvent, SignInGrant
from documents.services.grants import revoke_sign_in_grant
from mcp_endpoint.tests.conftest import McpClient

pytestmark = pytest.mark.django_db
BASE = "http://testserver"
REDIRECT = "http://127.0.0.1:33418/callback"


def register(client: Client, **extra) -> dict:
    body = {
        "client_name": "Test client",
        "redirect_uris": [REDIRECT],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        **extra,
    }
    response = client.post(
        "/oauth/register/", json.dumps(body), content_type="application/json"
    )
    assert response.status_code == 201, response.content
    return response.json()


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def authorize(client: Client, client_id: str, *, resource: str, scope="read"):
    verifier, challenge = pkce()
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "s1",
        "scope": scope,
        "resource": resource,
    }
    return client.get("/oauth/authorize/", params), verifier


def sign_in_and_get_tokens(client, app, *, resource=f"{BASE}/mcp/demo", scope="read"):
    page, verifier = authorize(client, app["client_id"], resource=resource, scope=scope)
    assert page.status_code == 200, page.content
    form = page.context["form"]
    data = {name: form[name].value() or "" for name in form.fields}
    consent = client.post("/oauth/authorize/", {**data, "allow": "Allow"})
    assert consent.status_code == 302, consent.content
    query = parse_qs(urlsplit(consent["Location"]).query)
    assert query["state"] == ["s1"]
    assert query["iss"] == [BASE]  # RFC 9207
    tokens = Client().post(
        "/oauth/token/",
        {
            "grant_type": "authorization_code",
            "code": query["code"][0],
            "redirect_uri": REDIRECT,
            "client_id": app["client_id"],
            "code_verifier": verifier,
            "resource": resource,
        },
    )
    assert tokens.status_code == 200, tokens.content
    return tokens.json()


def test_metadata_documents_describe_the_authorization_server(channels):
    """RFC 9728 per channel and at the root, RFC 8414 with PKCE S256 only, code
    flow only, registration, CIMD and the iss parameter."""
    resource = Client().get("/.well-known/oauth-protected-resource/mcp/demo").json()
    assert resource["resource"] == f"{BASE}/mcp/demo"
    assert resource["authorization_servers"] == [BASE]
    assert resource["scopes_supported"] == ["read", "write"]
    root = Client().get("/.well-known/oauth-protected-resource").json()
    assert root["authorization_servers"] == [BASE]
    server = Client().get("/.well-known/oauth-authorization-server").json()
    assert server["issuer"] == BASE
    assert server["code_challenge_methods_supported"] == ["S256"]
    assert server["response_types_supported"] == ["code"]
    assert server["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert server["registration_endpoint"] == f"{BASE}/oauth/register/"
    assert server["authorization_endpoint"] == f"{BASE}/oauth/authorize/"
    assert server["client_id_metadata_document_supported"] is True
    assert server["authorization_response_iss_parameter_supported"] is True


def test_every_401_points_at_the_resource_metadata(channels):
    """MCP and REST 401s carry resource_metadata and the scope to ask for."""
    mcp = McpClient("demo", None).send("tools/list")
    assert mcp.status_code == 401
    challenge = mcp["WWW-Authenticate"]
    assert challenge.startswith(
        f'Bearer resource_metadata="{BASE}/.well-known/oauth-protected-resource'
        '/mcp/demo", scope="read"'
    )
    bad = McpClient("demo", "not-a-token").send("tools/list")
    assert 'error="invalid_token"' in bad["WWW-Authenticate"]
    rest = Client().get("/api/channels/demo/documents")
    assert "resource_metadata=" in rest["WWW-Authenticate"]


def test_a_reader_signs_in_and_the_token_works_only_for_its_channel(
    client, channels, reader
):
    """A non-staff reader approves a registered client; the token opens the
    channel over MCP and REST for reads, is refused for writes (403
    insufficient_scope), on another channel (401, wrong audience) and after
    revocation (401)."""
    app = register(Client())
    client.force_login(reader)
    page, _ = authorize(client, app["client_id"], resource=f"{BASE}/mcp/demo")
    assert b"Test client" in page.content and b"Demo" in page.content
    assert b"127.0.0.1" in page.content  # the redirect host is named
    tokens = sign_in_and_get_tokens(client, app)
    assert tokens["token_type"] == "Bearer" and tokens["expires_in"] <= 3600
    token = tokens["access_token"]

    agent = McpClient("demo", token)
    result = agent.call_tool_expecting_success(
        "retrieve_text_chunks", {"query": "torque"}
    )
    assert result["structuredContent"]["chunks"]
    rest = Client(headers={"Authorization": f"Bearer {token}"})
    assert rest.get("/api/channels/demo/documents").status_code == 200
    assert [c["slug"] for c in rest.get("/api/channels").json()] == ["demo"]
    upload = rest.post(
        "/api/channels/demo/documents",
        {"file": SimpleUploadedFile("x.txt", b"x", "text/plain")},
    )
    assert upload.status_code == 403
    assert 'error="insufficient_scope"' in upload["WWW-Authenticate"]

    other = McpClient("secret", token).send("tools/list")
    assert other.status_code == 401
    assert "another server" in json.loads(other.content)["error"]["message"]

    grant = SignInGrant.objects.get()
    assert (grant.user, grant.channel.slug, grant.scopes) == (reader, "demo", ["read"])
    assert grant.last_used_at is not None
    revoke_sign_in_grant(grant=grant, actor=COMMAND_LINE)
    assert agent.send("tools/list").status_code == 401
    actions = list(
        AuditEvent.objects.filter(action__startswith="grant.").values_list(
            "action", flat=True
        )
    )
    assert actions == ["grant.revoke", "grant.create"]


def test_refresh_tokens_rotate_and_a_reused_one_is_refused(client, channels, reader):
    """A refresh gives a new access and refresh token for the same channel; the
    old refresh token no longer works (and its reuse revokes the family)."""
    app = register(Client())
    client.force_login(reader)
    tokens = sign_in_and_get_tokens(client, app)

    def refresh(refresh_token: str):
        return Client().post(
            "/oauth/token/",
            {
                "grant_type": "refresh_token",
                "refresh_token": refresh_token,
                "client_id": app["client_id"],
            },
        )

    renewed = refresh(tokens["refresh_token"])
    assert renewed.status_code == 200, renewed.content
    fresh = renewed.json()
    assert fresh["refresh_token"] != tokens["refresh_token"]
    assert (
        McpClient("demo", fresh["access_token"]).send("tools/list").status_code == 200
    )
    assert refresh(tokens["refresh_token"]).status_code == 400


def test_who_may_grant_what(client, channels, reader):
    """A reader may grant read, not write (curators may); nobody grants a channel
    they can't see, or something that isn't one of this server's channels; PKCE
    plain is refused."""
    app = register(Client())
    client.force_login(reader)
    write, _ = authorize(
        client, app["client_id"], resource=f"{BASE}/mcp/demo", scope="read write"
    )
    assert write.status_code == 403 and b"only its curators" in write.content
    secret, _ = authorize(client, app["client_id"], resource=f"{BASE}/mcp/secret")
    assert secret.status_code == 403 and b"no access" in secret.content
    elsewhere, _ = authorize(
        client, app["client_id"], resource="https://evil.example/mcp/demo"
    )
    assert elsewhere.status_code == 403
    curator = User.objects.create_user("cora", password="pw", is_staff=True)
    channels[0].curators.add(curator)
    client.force_login(curator)
    tokens = sign_in_and_get_tokens(client, app, scope="read write")
    assert set(tokens["scope"].split()) == {"read", "write"}
    plain = client.get(
        "/oauth/authorize/",
        {
            "response_type": "code",
            "client_id": app["client_id"],
            "redirect_uri": REDIRECT,
            "code_challenge": "x" * 43,
            "code_challenge_method": "plain",
            "resource": f"{BASE}/mcp/demo",
        },
    )
    assert plain.status_code == 403 and b"S256" in plain.content


def test_registration_takes_https_or_loopback_redirects_and_is_throttled(settings):
    """Redirect URIs must be https or on the loopback; past
    OAUTH_REGISTRATIONS_PER_HOUR registrations an address gets 429."""
    response = Client().post(
        "/oauth/register/",
        json.dumps({"client_name": "x", "redirect_uris": ["http://evil.example/cb"]}),
        content_type="application/json",
    )
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_redirect_uri"
    settings.OAUTH_REGISTRATIONS_PER_HOUR = 2
    client = Client(REMOTE_ADDR="10.4.4.4")
    statuses = [
        client.post(
            "/oauth/register/",
            json.dumps({"client_name": "x", "redirect_uris": [REDIRECT]}),
            content_type="application/json",
        ).status_code
        for _ in range(4)
    ]
    assert statuses == [201, 201, 429, 429]
