"""Issue 19's sign-in findings at the authorization endpoint, each reproduced:
no code without the consent page, a grant only where a code was issued, a
token worth no more than its grant, `iss` on every redirect, clear refusals."""

from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from oauth2_provider.models import get_access_token_model, get_application_model

from documents.models import AuditEvent, SignInGrant
from signin.tests.test_flow import (
    BASE,
    REDIRECT,
    authorize,
    pkce,
    register,
    sign_in_and_get_tokens,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_with_grants(client, channels, make_channel):
    """Issue 19's scene: the admin approved client C for write on `alpha` and
    for read only on `demo`, and holds live tokens of C."""
    make_channel("alpha", name="Alpha")
    admin = User.objects.create_superuser("boss", "boss@example.org", "pw")
    app = register(Client())
    client.force_login(admin)
    alpha = sign_in_and_get_tokens(
        client, app, resource=f"{BASE}/mcp/alpha", scope="read write"
    )
    demo = sign_in_and_get_tokens(client, app, resource=f"{BASE}/mcp/demo")
    return app, alpha, demo


def form_data(page) -> dict:
    form = page.context["form"]
    return {name: form[name].value() or "" for name in form.fields}


def grant_scopes(slug: str) -> list[str]:
    return SignInGrant.objects.get(channel__slug=slug, revoked_at=None).scopes


@pytest.mark.parametrize("extra", [{"approval_prompt": "auto"}, {}])
def test_no_code_without_the_consent_page(client, admin_with_grants, extra):
    """The request that used to get a `read write` code for `demo` straight
    away (approval_prompt=auto, the admin holding tokens of the client) now
    gets the consent page, and the grant stays read only."""
    app, _, _ = admin_with_grants
    _, challenge = pkce()
    params = {
        "response_type": "code",
        "client_id": app["client_id"],
        "redirect_uri": REDIRECT,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "s2",
        "scope": "read write",
        "resource": f"{BASE}/mcp/demo",
        **extra,
    }
    for scope in ("read write", "read"):  # the exact earlier scope too
        page = client.get("/oauth/authorize/", {**params, "scope": scope})
        assert page.status_code == 200, page.get("Location")
        assert b'id="authorizationForm"' in page.content
    assert grant_scopes("demo") == ["read"]
    assert grant_scopes("alpha") == ["read", "write"]


def test_an_application_marked_to_skip_authorization_still_asks(
    client, admin_with_grants
):
    app, _, _ = admin_with_grants
    get_application_model().objects.filter(client_id=app["client_id"]).update(
        skip_authorization=True
    )
    page, _ = authorize(client, app["client_id"], resource=f"{BASE}/mcp/demo")
    assert page.status_code == 200 and b'id="authorizationForm"' in page.content


def test_a_token_beyond_its_grant_is_refused(client, admin_with_grants):
    """A `read write` token under a read grant (what the bypass minted) is
    refused on a write: 403 insufficient_scope; the same token still reads."""
    _, _, demo = admin_with_grants
    token = get_access_token_model().objects.get(
        resource=[f"{BASE}/mcp/demo"], source_refresh_token=None
    )
    token.scope = "read write"
    token.save(update_fields=["scope"])
    rest = Client(headers={"Authorization": f"Bearer {demo['access_token']}"})
    upload = rest.post(
        "/api/channels/demo/documents",
        {"file": SimpleUploadedFile("x.txt", b"x", "text/plain")},
    )
    assert upload.status_code == 403, upload.content
    assert 'error="insufficient_scope"' in upload["WWW-Authenticate"]
    assert rest.get("/api/channels/demo/documents").status_code == 200
    assert grant_scopes("demo") == ["read"]


def test_a_grant_is_widened_only_by_a_consent(client, admin_with_grants):
    app, _, _ = admin_with_grants
    sign_in_and_get_tokens(client, app, resource=f"{BASE}/mcp/demo", scope="read write")
    assert grant_scopes("demo") == ["read", "write"]


def test_no_grant_when_the_authorization_fails(client, channels, reader):
    """A consent answer whose redirect URI isn't the client's is refused, and
    records no grant; so does a GET naming one."""
    app = register(Client())
    client.force_login(reader)
    page, _ = authorize(client, app["client_id"], resource=f"{BASE}/mcp/demo")
    data = {**form_data(page), "redirect_uri": "https://evil.example/cb"}
    answer = client.post("/oauth/authorize/", {**data, "allow": "Allow"})
    assert answer.status_code == 400
    assert not answer.has_header("Location")
    _, challenge = pkce()
    elsewhere = client.get(
        "/oauth/authorize/",
        {
            "response_type": "code",
            "client_id": app["client_id"],
            "redirect_uri": "http://127.0.0.1:9/other",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "resource": f"{BASE}/mcp/demo",
        },
    )
    assert elsewhere.status_code == 400
    assert not SignInGrant.objects.exists()


@pytest.mark.parametrize(
    "extra", [{"prompt": "none"}, {"approval_prompt": "auto", "prompt": "none"}]
)
def test_prompt_none_hears_consent_required_and_gets_no_code(
    client, admin_with_grants, extra
):
    """prompt=none forbids the page and Quire issues no code without it, even
    to a person who approved the client before: the client is told
    consent_required (with its state and iss), and nothing is granted."""
    app, _, _ = admin_with_grants
    _, challenge = pkce()
    answer = client.get(
        "/oauth/authorize/",
        {
            "response_type": "code",
            "client_id": app["client_id"],
            "redirect_uri": REDIRECT,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": "s5",
            "scope": "read",
            "resource": f"{BASE}/mcp/demo",
            **extra,
        },
    )
    assert answer.status_code == 302
    location = urlsplit(answer["Location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == REDIRECT
    query = parse_qs(location.query)
    assert query["error"] == ["consent_required"] and "code" not in query
    assert query["state"] == ["s5"] and query["iss"] == [BASE]
    assert grant_scopes("demo") == ["read"]


def test_cancel_grants_nothing_is_audited_and_redirects_with_iss(
    client, channels, reader
):
    app = register(Client())
    client.force_login(reader)
    page, _ = authorize(client, app["client_id"], resource=f"{BASE}/mcp/demo")
    answer = client.post("/oauth/authorize/", form_data(page), REMOTE_ADDR="10.9.9.9")
    assert answer.status_code == 302
    query = parse_qs(urlsplit(answer["Location"]).query)
    assert query["error"] == ["access_denied"]
    assert query["state"] == ["s1"] and query["iss"] == [BASE]
    assert not SignInGrant.objects.exists()
    event = AuditEvent.objects.get(action="consent.refuse")
    assert (event.user, event.channel_slug) == (reader, "demo")
    assert event.client_address == "10.9.9.9"


def test_error_redirects_carry_iss(client, channels, reader):
    """RFC 9207: an error sent back to the client names the issuer too."""
    app = register(Client())
    client.force_login(reader)
    _, challenge = pkce()
    answer = client.get(
        "/oauth/authorize/",
        {
            "response_type": "token",
            "client_id": app["client_id"],
            "redirect_uri": REDIRECT,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": "s3",
            "resource": f"{BASE}/mcp/demo",
        },
    )
    assert answer.status_code == 302
    query = parse_qs(urlsplit(answer["Location"]).query)
    assert "error" in query and query["iss"] == [BASE] and query["state"] == ["s3"]
    anonymous = Client().get(
        "/oauth/authorize/",
        {
            "response_type": "code",
            "client_id": app["client_id"],
            "redirect_uri": REDIRECT,
            "prompt": "none",
            "state": "s4",
            "resource": f"{BASE}/mcp/demo",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        },
    )
    query = parse_qs(urlsplit(anonymous["Location"]).query)
    assert query["error"] == ["login_required"] and query["iss"] == [BASE]


@pytest.mark.parametrize("client_id", ["no-such-client", ""])
def test_a_consent_answer_for_an_unknown_client_is_a_clear_400(
    client, channels, reader, client_id
):
    app = register(Client())
    client.force_login(reader)
    page, _ = authorize(client, app["client_id"], resource=f"{BASE}/mcp/demo")
    answer = client.post(
        "/oauth/authorize/",
        {**form_data(page), "client_id": client_id, "allow": "Allow"},
    )
    assert answer.status_code == 400
    assert b"start again from the client" in answer.content
    assert not SignInGrant.objects.exists()


def test_signing_in_without_next_lands_on_the_home_page(channels, reader):
    answer = Client().post("/signin/login/", {"username": "rita", "password": "pw"})
    assert answer.status_code == 302 and answer["Location"] == "/"
    assert Client().get(answer["Location"]).status_code == 200


def test_wrong_passwords_are_audited_at_both_login_pages(channels, reader):
    for path in ("/signin/login/", "/admin/login/"):
        Client(REMOTE_ADDR="10.7.7.7").post(
            path, {"username": "rita", "password": "wrong"}
        )
    events = AuditEvent.objects.filter(action="login.failed").order_by("at", "id")
    assert [(e.via, e.client_address) for e in events] == [
        ("signin", "10.7.7.7"),
        ("admin", "10.7.7.7"),
    ]
    assert all("rita" in e.detail and "wrong" not in e.detail for e in events)
