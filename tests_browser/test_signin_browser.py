"""Sign-in with OAuth from a real MCP client: the official SDK's OAuth client
against the live server, discovery from the 401, dynamic client registration,
Chromium signing in and approving the consent page, the token used on
tools/list and rag_search, refused on another channel and after the grant is
revoked in the admin; the MCP Inspector CLI connects with the same token."""

import asyncio
import json
import re
import socket

import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from playwright.async_api import async_playwright

from mcp_endpoint.tests.node import INSPECTOR, node_env, require_node
from tests_browser.conftest import CHROMIUM, CHROMIUM_ARGS

# A channel the token was not issued for (whether it exists doesn't matter:
# the audience check refuses the token first).
OTHER = "signin-other"
# django_db: the session needs the test database (the server writes to it).
pytestmark = [pytest.mark.slow, pytest.mark.django_db]


class MemoryStorage:
    """The SDK's TokenStorage, in memory."""

    def __init__(self):
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client_info):
        self.client = client_info


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def sign_in_flow(site, seen: dict) -> None:
    port = free_port()
    callback_url = f"http://127.0.0.1:{port}/callback"
    mcp_url = f"{site.base_url}/mcp/{site.slug}"
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
        )
        page = await browser.new_page(viewport={"width": 1280, "height": 900})
        landed: asyncio.Future = asyncio.get_running_loop().create_future()

        async def capture(route):
            if not landed.done():
                landed.set_result(route.request.url)
            await route.fulfill(body="You can close this window.")

        await page.route(f"{callback_url}*", capture)

        async def open_in_browser(url: str) -> None:
            seen["authorize_url"] = url
            await page.goto(url)
            await page.fill("#id_username", site.username)
            await page.fill("#id_password", site.password)
            await page.click("input[type=submit]")
            await page.wait_for_selector("#authorizationForm")
            seen["consent"] = await page.inner_text("#content-main")
            await page.screenshot(path="test-artifacts/signin-consent.png")
            await page.click("input[name=allow]")

        async def wait_for_callback() -> AuthorizationCodeResult:
            try:
                url = httpx2.URL(await asyncio.wait_for(landed, 30))
            except TimeoutError:
                await page.screenshot(path="test-artifacts/signin-stuck.png")
                raise AssertionError(
                    f"No callback; the browser is at {page.url}:\n"
                    + (await page.inner_text("body"))[:2000]
                ) from None
            seen["callback"] = str(url)
            return AuthorizationCodeResult(
                code=url.params["code"],
                state=url.params.get("state"),
                iss=url.params.get("iss"),
            )

        storage = MemoryStorage()
        provider = OAuthClientProvider(
            server_url=mcp_url,
            client_metadata=OAuthClientMetadata(
                client_name="Quire SDK test",
                redirect_uris=[callback_url],
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
                token_endpoint_auth_method="none",
            ),
            storage=storage,
            redirect_handler=open_in_browser,
            callback_handler=wait_for_callback,
        )
        http = httpx2.AsyncClient(auth=provider, timeout=120)
        async with Client(streamable_http_client(mcp_url, http_client=http)) as client:
            tools = await client.list_tools()
            seen["tools"] = [tool.name for tool in tools.tools]
            answer = await client.call_tool(
                "rag_search", {"query": "How are self-locking nuts reused?"}
            )
            seen["answer"] = answer.structured_content
        seen["client_id"] = storage.client.client_id
        token = storage.tokens.access_token
        seen["token"] = token

        # The MCP Inspector CLI with the token the sign-in gave.
        inspector = await asyncio.create_subprocess_exec(
            "npx",
            "-y",
            INSPECTOR,
            "--cli",
            mcp_url,
            "--transport",
            "http",
            "--header",
            f"Authorization: Bearer {token}",
            "--method",
            "tools/list",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=node_env(),
        )
        out, err = await asyncio.wait_for(inspector.communicate(), 300)
        seen["inspector"] = (inspector.returncode, out.decode(), err.decode())

        async with httpx2.AsyncClient(timeout=30) as plain:
            headers = {
                "Authorization": f"Bearer {token}",
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2025-11-25",
            }
            body = '{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'
            other = await plain.post(
                f"{site.base_url}/mcp/{OTHER}", content=body, headers=headers
            )
            seen["other_channel"] = (
                other.status_code,
                other.headers.get("www-authenticate"),
            )

            # Revoke in the admin, as an administrator would.
            await page.goto(f"{site.base_url}/admin/documents/signingrant/")
            seen["grants_page"] = await page.inner_text("#result_list")
            await page.check("input[name=_selected_action]")
            await page.select_option("select[name=action]", "revoke_selected")
            await page.click("button[name=index]")
            seen["revoked_message"] = await page.inner_text(".messagelist")
            again = await plain.post(mcp_url, content=body, headers=headers)
            seen["after_revoke"] = again.status_code
        await browser.close()


def test_an_mcp_client_signs_in_with_oauth_and_uses_one_channel(site):
    require_node()
    seen: dict = {}
    asyncio.run(sign_in_flow(site, seen))
    assert "resource=" in seen["authorize_url"]
    assert "code_challenge_method=S256" in seen["authorize_url"]
    consent = seen["consent"]
    assert "Quire SDK test" in consent
    assert site.channel_name in consent
    assert "Read: search, read and cite" in consent
    assert "127.0.0.1" in consent
    assert (
        f"iss={site.base_url.replace(':', '%3A').replace('/', '%2F')}"
        in seen["callback"]
        or f"iss={site.base_url}" in seen["callback"]
    )
    assert "rag_search" in seen["tools"] and "get_pages" in seen["tools"]
    code, out, err = seen["inspector"]
    assert code == 0, err
    assert {tool["name"] for tool in json.loads(out)["tools"]} >= {"rag_search"}
    assert seen["answer"]["citations"]
    status, challenge = seen["other_channel"]
    assert status == 401 and 'error="invalid_token"' in challenge
    assert "Quire SDK test" in seen["grants_page"]
    assert site.channel_name in seen["grants_page"] or site.slug in seen["grants_page"]
    assert "Revoked 1 sign-in grant" in seen["revoked_message"]
    assert seen["after_revoke"] == 401


CONFORMANCE = "@modelcontextprotocol/conformance@0.2.0-alpha.12"


async def authorization_conformance(site, out_dir, seen: dict) -> None:
    """Register a client over HTTP, run the suite's authorization scenarios
    against Quire's authorization server and sign in where it asks."""
    port = free_port()
    async with httpx2.AsyncClient(timeout=30) as http:
        registered = await http.post(
            f"{site.base_url}/oauth/register/",
            json={
                "client_name": "MCP conformance suite",
                "redirect_uris": [f"http://127.0.0.1:{port}/callback"],
                "token_endpoint_auth_method": "none",
            },
        )
    client_id = registered.json()["client_id"]
    suite = await asyncio.create_subprocess_exec(
        "npx",
        "-y",
        CONFORMANCE,
        "authorization",
        "--url",
        site.base_url,
        "--client-id",
        client_id,
        "--resource",
        f"{site.base_url}/mcp/{site.slug}",
        "-p",
        str(port),
        "-o",
        str(out_dir),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=node_env(),
    )
    lines = []
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
        )
        page = await browser.new_page()
        while True:
            line = await asyncio.wait_for(suite.stdout.readline(), 300)
            if not line:
                break
            text = line.decode().strip()
            lines.append(text)
            if text.startswith(f"{site.base_url}/oauth/authorize/"):
                await page.goto(text)
                await page.fill("#id_username", site.username)
                await page.fill("#id_password", site.password)
                await page.click("input[type=submit]")
                await page.wait_for_selector("#authorizationForm")
                await page.click("input[name=allow]")
        await browser.close()
    await suite.wait()
    seen["output"] = "\n".join(lines)
    seen["returncode"] = suite.returncode


def test_the_authorization_server_passes_the_conformance_scenarios(site, tmp_path):
    """Every authorization-server scenario of the installed conformance suite
    (0.2.0-alpha.12: metadata endpoint, authorization code grant with PKCE,
    resource and iss) passes, a person signing in in Chromium."""
    require_node()
    seen: dict = {}
    asyncio.run(authorization_conformance(site, tmp_path, seen))
    scenarios = {
        re.sub(r"-\d{4}-\d{2}-\d{2}T.*$", "", path.parent.name): json.loads(
            path.read_text()
        )
        for path in tmp_path.glob("authorization-server-*/checks.json")
    }
    assert set(scenarios) == {
        "authorization-server-authorization-server-metadata-endpoint",
        "authorization-server-authorization-code-grant",
    }, seen["output"]
    for name, checks in scenarios.items():
        assert checks and all(c["status"] == "SUCCESS" for c in checks), (
            name,
            checks,
        )
    assert seen["returncode"] == 0, seen["output"]


ALPHA = "signin-alpha"


@pytest.fixture(scope="module")
def alpha(site, django_db_blocker):
    """A second channel, committed so the live server sees it; the client
    registered in the test and everything under it go with it."""
    from oauth2_provider.models import get_application_model

    from documents.models import Channel
    from documents.services.channels import create_channel

    with django_db_blocker.unblock():
        create_channel(slug=ALPHA, name="Alpha (sign-in test)")
    yield ALPHA
    with django_db_blocker.unblock():
        Channel.objects.filter(slug=ALPHA).delete()
        get_application_model().objects.filter(name="Consent test client").delete()


def pkce_pair() -> tuple[str, str]:
    import base64
    import hashlib
    import secrets

    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


async def consent_flow(site, alpha: str, seen: dict) -> None:
    """Issue 19's High finding, as observed: the admin approves client C for
    write on alpha and read on the demo channel, then C asks for `read write`
    on the demo channel with approval_prompt=auto, and with prompt=none."""
    port = free_port()
    callback_url = f"http://127.0.0.1:{port}/callback"
    async with httpx2.AsyncClient(base_url=site.base_url, timeout=30) as http:
        registered = await http.post(
            "/oauth/register/",
            json={
                "client_name": "Consent test client",
                "redirect_uris": [callback_url],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none",
            },
        )
        assert registered.status_code == 201, registered.text
        client_id = registered.json()["client_id"]

        def authorize_url(slug: str, scope: str, challenge: str, **extra) -> str:
            params = {
                "response_type": "code",
                "client_id": client_id,
                "redirect_uri": callback_url,
                "code_challenge": challenge,
                "code_challenge_method": "S256",
                "state": slug,
                "scope": scope,
                "resource": f"{site.base_url}/mcp/{slug}",
                **extra,
            }
            return str(httpx2.URL(f"{site.base_url}/oauth/authorize/", params=params))

        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(
                executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
            )
            page = await browser.new_page()
            callbacks: list[str] = []

            async def capture(route):
                callbacks.append(route.request.url)
                await route.fulfill(body="You can close this window.")

            await page.route(f"{callback_url}*", capture)

            async def approve(slug: str, scope: str) -> dict:
                verifier, challenge = pkce_pair()
                await page.goto(authorize_url(slug, scope, challenge))
                if await page.query_selector("#id_username"):
                    await page.fill("#id_username", site.username)
                    await page.fill("#id_password", site.password)
                    await page.click("input[type=submit]")
                await page.wait_for_selector("#authorizationForm")
                before = len(callbacks)
                await page.click("input[name=allow]")
                await page.wait_for_function(
                    "() => document.body.innerText.includes('close this window')"
                )
                assert len(callbacks) == before + 1
                code = httpx2.URL(callbacks[-1]).params["code"]
                tokens = await http.post(
                    "/oauth/token/",
                    data={
                        "grant_type": "authorization_code",
                        "code": code,
                        "redirect_uri": callback_url,
                        "client_id": client_id,
                        "code_verifier": verifier,
                        "resource": f"{site.base_url}/mcp/{slug}",
                    },
                )
                assert tokens.status_code == 200, tokens.text
                return tokens.json()

            seen["alpha"] = await approve(alpha, "read write")
            seen["demo"] = await approve(site.slug, "read")

            seen["bypass"] = []
            for extra in ({"approval_prompt": "auto"},):
                before = len(callbacks)
                _, challenge = pkce_pair()
                await page.goto(
                    authorize_url(site.slug, "read write", challenge, **extra)
                )
                await page.wait_for_load_state("load")
                seen["bypass"].append(
                    (
                        extra,
                        await page.query_selector("#authorizationForm") is not None,
                        len(callbacks) - before,
                        page.url.startswith(f"{site.base_url}/oauth/authorize/"),
                    )
                )
            await page.screenshot(path="test-artifacts/signin-auto-consent.png")
            # prompt=none forbids the page: the answer is a redirect to the
            # client (page.route does not see a navigation's redirect target,
            # so the signed-in browser's own request context asks, unfollowed).
            _, challenge = pkce_pair()
            answer = await page.context.request.get(
                authorize_url(site.slug, "read write", challenge, prompt="none"),
                max_redirects=0,
            )
            seen["prompt_none"] = (answer.status, answer.headers.get("location", ""))
            await browser.close()

        write = await http.post(
            f"/api/channels/{site.slug}/documents",
            headers={"Authorization": f"Bearer {seen['demo']['access_token']}"},
            files={"file": ("x.txt", b"not allowed", "text/plain")},
        )
        seen["write"] = (write.status_code, write.headers.get("www-authenticate"))
        read = await http.get(
            f"/api/channels/{site.slug}/documents",
            headers={"Authorization": f"Bearer {seen['demo']['access_token']}"},
        )
        seen["read"] = read.status_code


def test_approval_prompt_auto_gets_the_consent_page_not_a_code(site, alpha):
    from documents.models import SignInGrant

    seen: dict = {}
    asyncio.run(consent_flow(site, alpha, seen))
    assert set(seen["alpha"]["scope"].split()) == {"read", "write"}
    assert seen["demo"]["scope"] == "read"
    for extra, consent_page, codes, still_here in seen["bypass"]:
        assert consent_page and still_here, extra
        assert codes == 0, extra
    status, location = seen["prompt_none"]
    assert status == 302, location
    answer = httpx2.URL(location)
    assert answer.params["error"] == "consent_required"
    assert "code" not in answer.params and answer.params["state"] == site.slug
    status, challenge = seen["write"]
    assert status == 403 and 'error="insufficient_scope"' in challenge
    assert seen["read"] == 200
    grants = {
        grant.channel.slug: grant.scopes
        for grant in SignInGrant.objects.filter(
            application__name="Consent test client", revoked_at=None
        ).select_related("channel")
    }
    assert grants == {alpha: ["read", "write"], site.slug: ["read"]}
