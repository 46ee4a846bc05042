"""Forwarded headers never decide who the client is (issue 19, finding 2).

A real uvicorn, started as Quire starts it (demo.web.uvicorn_command, the
command `runquire` and the README's production section use), on 127.0.0.1 with
PROXY_TRUSTED_HOPS=0: a fresh `X-Forwarded-For` per request escapes none of the
failed-key throttle, django-axes' lockout and the registration throttle, nor
forges the audit trail's address; `X-Forwarded-Proto: https` changes no URL
Quire prints. Quire's HTTP protocol holds this even when uvicorn is started
without `--no-proxy-headers` (the README's command before this issue).

The limits are per minute (failed keys) and per hour (registrations) and the
server's clock can't be pinned, so each count allows for one window boundary
during the burst: with a limit L, N requests are refused at least N - 2(L+1)
times (never, before the fix).
"""

import re
import subprocess
import sys
import time
from itertools import count

import httpx
import pytest
from django.contrib.auth import get_user_model
from django.test import RequestFactory

from demo.web import HTTP_PROTOCOL, uvicorn_command
from documents.access import client_address
from documents.models import AuditEvent
from mcp_endpoint.tests.live import REPO, free_port, server_environment, stop_server

FAILURE_LIMIT = 3
AXES_LIMIT = 2
REGISTRATION_LIMIT = 2
BURST = 12
PASSWORD = "correct horse battery staple"
_forged = count(1)


def forged_address() -> str:
    """A fresh documentation address (RFC 5737) per request."""
    number = next(_forged)
    return f"203.0.{113 + number // 250}.{number % 250 + 1}"


def start(tmp_path, command: list[str]) -> tuple[subprocess.Popen, str]:
    env = server_environment(tmp_path / "media", "")
    env.update(
        AUTH_FAILURES_PER_MINUTE=str(FAILURE_LIMIT),
        AXES_FAILURE_LIMIT=str(AXES_LIMIT),
        OAUTH_REGISTRATIONS_PER_HOUR=str(REGISTRATION_LIMIT),
        PROXY_TRUSTED_HOPS="0",
    )
    env.pop("FORWARDED_ALLOW_IPS", None)
    process = subprocess.Popen(
        command,
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    base_url = f"http://127.0.0.1:{command[command.index('--port') + 1]}"
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(f"{base_url}/admin/login/", timeout=2)
            return process, base_url
        except httpx.HTTPError:
            if time.monotonic() > deadline or process.poll() is not None:
                stop_server(process)
                raise RuntimeError("uvicorn did not start") from None
            time.sleep(0.3)


@pytest.fixture
def staff(transactional_db):
    return get_user_model().objects.create_user(
        "keeper", password=PASSWORD, is_staff=True
    )


@pytest.fixture
def quire(tmp_path, staff):
    """Quire as it is served: uvicorn_command."""
    process, base_url = start(tmp_path, uvicorn_command(port=free_port()))
    yield base_url
    stop_server(process)


@pytest.fixture
def old_command(tmp_path, transactional_db):
    """The README's production command before issue 19: Quire's protocol but
    uvicorn's default proxy headers (trusted from 127.0.0.1)."""
    port = free_port()
    command = [sys.executable, "-m", "uvicorn", "project.asgi:application"]
    command += ["--port", str(port), "--http", HTTP_PROTOCOL, "--lifespan", "off"]
    process, base_url = start(tmp_path, command)
    yield base_url
    stop_server(process)


def forwarded(**headers: str) -> dict[str, str]:
    return {"X-Forwarded-For": forged_address(), **headers}


def refused_keys(base_url: str) -> list[int]:
    return [
        httpx.get(
            f"{base_url}/api/channels",
            headers=forwarded(Authorization="Bearer qk_wrong-key-of-some-length"),
        ).status_code
        for _ in range(BURST)
    ]


def assert_throttled(statuses: list[int], limit: int) -> None:
    assert statuses.count(429) >= BURST - 2 * (limit + 1), statuses


def assert_audit_has_only_the_real_address() -> None:
    addresses = set(
        AuditEvent.objects.filter(action="auth.refused").values_list(
            "client_address", flat=True
        )
    )
    assert addresses == {"127.0.0.1"}


@pytest.mark.slow
def test_a_new_forwarded_address_per_request_escapes_no_limit(quire):
    """Wrong keys, wrong passwords and registrations, each request with its own
    X-Forwarded-For: all are counted against 127.0.0.1, the audit trail
    records 127.0.0.1, and the locked-out account refuses its right password."""
    assert_throttled(refused_keys(quire), FAILURE_LIMIT)
    assert_audit_has_only_the_real_address()

    browser = httpx.Client(base_url=quire)
    page = browser.get("/admin/login/").text
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)[1]

    def sign_in(password: str) -> httpx.Response:
        return browser.post(
            "/admin/login/?next=/admin/",
            data={
                "username": "keeper",
                "password": password,
                "csrfmiddlewaretoken": token,
                "next": "/admin/",
            },
            headers=forwarded(),
        )

    guesses = [sign_in(f"guess {n}").status_code for n in range(AXES_LIMIT + 3)]
    assert guesses[AXES_LIMIT:] == [429] * 3, guesses
    assert sign_in(PASSWORD).status_code == 429
    assert "sessionid" not in browser.cookies

    registrations = [
        httpx.post(
            f"{quire}/oauth/register/",
            json={"redirect_uris": ["https://client.example/cb"]},
            headers=forwarded(),
        ).status_code
        for _ in range(BURST)
    ]
    assert_throttled(registrations, REGISTRATION_LIMIT)


def assert_urls_stay_http(base_url: str) -> None:
    challenge = httpx.post(
        f"{base_url}/mcp/alpha",
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        headers=forwarded(**{"X-Forwarded-Proto": "https"}),
    )
    assert challenge.status_code == 401
    metadata_url = f"{base_url}/.well-known/oauth-protected-resource/mcp/alpha"
    assert (
        f'resource_metadata="{metadata_url}"' in (challenge.headers["WWW-Authenticate"])
    )
    issuer = httpx.get(
        f"{base_url}/.well-known/oauth-authorization-server",
        headers=forwarded(**{"X-Forwarded-Proto": "https"}),
    ).json()
    assert issuer["issuer"] == base_url
    assert issuer["token_endpoint"] == f"{base_url}/oauth/token/"


@pytest.mark.slow
def test_a_forwarded_proto_changes_no_printed_url(quire):
    """`X-Forwarded-Proto: https` from a client: the 401's resource_metadata
    URL and the OAuth metadata still say http://, as the connection is."""
    assert_urls_stay_http(quire)


@pytest.mark.slow
def test_quires_protocol_ignores_forwarded_headers_without_the_flag(old_command):
    """Started without `--no-proxy-headers`, uvicorn would believe 127.0.0.1's
    forwarded headers; Quire's protocol drops that rewriting, so the address,
    the throttle and the printed URLs are the same."""
    assert_urls_stay_http(old_command)
    assert_throttled(refused_keys(old_command), FAILURE_LIMIT)
    assert_audit_has_only_the_real_address()


@pytest.mark.parametrize(
    "hops, header, expected",
    [
        (0, "198.51.100.7", "10.0.0.1"),
        (1, "198.51.100.7", "198.51.100.7"),
        (1, "6.6.6.6, 198.51.100.7", "198.51.100.7"),
        (2, "6.6.6.6, 198.51.100.7, 10.0.0.2", "198.51.100.7"),
        (2, "198.51.100.7", "10.0.0.1"),
        (1, "not-an-address", "10.0.0.1"),
        (1, "", "10.0.0.1"),
    ],
)
def test_the_client_address_follows_proxy_trusted_hops_alone(
    settings, hops, header, expected
):
    """0: the connection's address, whatever X-Forwarded-For says; N: the Nth
    entry from the right (what the outermost trusted proxy saw); an entry
    missing or not an IP address keeps the connection's address."""
    settings.PROXY_TRUSTED_HOPS = hops
    request = RequestFactory().get(
        "/", REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR=header
    )
    assert client_address(request) == expected
