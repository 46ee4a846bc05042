"""Quire behind Debian's nginx, configured from deploy/nginx/quire.conf (issue 24).

The site file is rendered with this test's ports and a self-signed certificate
(openssl), nginx runs as the test's own process, and Quire runs as a
deployment behind a TLS proxy does (PROXY_TRUSTED_HOPS=1,
PROXY_TRUSTED_ADDRESSES=127.0.0.1, DJANGO_BEHIND_TLS_PROXY and secure cookies,
HSTS and the https redirect on), on the live test data. Real clients speak
https to nginx only: OAuth discovery, challenges, tool calls and citation
links carry the public https://localhost:<port> URL; a rag_search streams
through unbuffered (its progress arrives while the chat model is still held
back by the test); a client that reaches Quire directly is not believed about
its scheme or address; a body over Quire's limit is refused by nginx.
"""

import asyncio
import json
import os
import pwd
import re
import shutil
import socket
import ssl
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import httpx2
import pytest
from django.conf import settings
from django.test import override_settings
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from documents.access import COMMAND_LINE
from documents.models import ApiKey, Channel
from documents.services.channels import create_channel
from documents.services.keys import create_api_key
from documents.tests.chat_model import start_chat_model_server
from documents.tests.corpus import add_document
from mcp_endpoint.tests import live

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

NGINX = "/usr/sbin/nginx"
SITE_TEMPLATE = live.REPO / "deploy" / "nginx" / "quire.conf"
PLACEHOLDER = re.compile(r"\$\{(QUIRE_[A-Z_]+)\}")
MODERN = "2026-07-28"
HSTS_SECONDS = 31536000
ANSWERS_SLUG = "proxy-answers"
# A documentation address (RFC 5737): the only one allowed to read /metrics.
METRICS_READER = "203.0.113.7"
# A loopback address that is not the proxy's: a client reaching Quire directly.
OUTSIDER = "127.0.0.3"

# The process that starts nginx owns its files; nginx runs as the test user.
WRAPPER = """\
daemon off;
user {user};
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log {prefix}/access.log;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    include {prefix}/quire.conf;
}}
"""


def render_site(values: dict[str, str]) -> str:
    """deploy/nginx/quire.conf with its ${QUIRE_*} placeholders filled, as
    envsubst does with the names it is given; a placeholder without a value
    fails here."""
    return PLACEHOLDER.sub(lambda m: values[m.group(1)], SITE_TEMPLATE.read_text())


def self_signed_certificate(folder: Path) -> tuple[Path, Path]:
    certificate, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2"]
        + ["-keyout", str(key), "-out", str(certificate), "-subj", "/CN=localhost"]
        + ["-addext", "subjectAltName=DNS:localhost"],
        check=True,
        capture_output=True,
    )
    return certificate, key


def wait_for_port(port: int, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"nginx exited: {log.read_text()}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError("nginx did not listen within 30 s")


@dataclass
class Proxied:
    public: str  # https://localhost:<port>, through nginx
    plain: str  # http://localhost:<port>, nginx's redirect
    direct: str  # Quire's own http://127.0.0.1:<port>
    certificate: Path
    demo_slug: str
    demo_key: str
    answers_key: str
    release_answer: threading.Event
    chat_requests: list[dict]

    def tls(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.certificate))

    def client(self, **options) -> httpx.Client:
        return httpx.Client(
            base_url=self.public, verify=self.tls(), timeout=30, **options
        )


@pytest.fixture(scope="module")
def proxied(quire_server, django_db_blocker, tmp_path_factory):
    """nginx on free https and http ports in front of a Quire process started
    with the proxy settings, both on the live test data; a channel whose
    rag_search asks a local chat model that answers when the test says so."""
    if not os.access(NGINX, os.X_OK):
        pytest.skip("Debian's nginx is missing: make nginx")
    prefix = tmp_path_factory.mktemp("nginx")
    for folder in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (prefix / folder).mkdir()
    certificate, key = self_signed_certificate(prefix)
    https_port, http_port = live.free_port(), live.free_port()
    public = f"https://localhost:{https_port}"

    release = threading.Event()

    def held_back_reply(labels: list[str]) -> str:
        if not release.wait(60):
            return "Held back until the wait ran out."
        return f"Quire answers through the proxy {labels[0]}."

    chat, chat_url, chat_requests = start_chat_model_server(held_back_reply)
    endpoints = {"stub": {"base_url": chat_url, "api_key_env": "", "models": []}}
    with django_db_blocker.unblock(), override_settings(CHAT_MODEL_ENDPOINTS=endpoints):
        channel = create_channel(
            slug=ANSWERS_SLUG,
            name="Proxy answers",
            generator_kind=Channel.GeneratorKind.CHAT,
            generator_endpoint="stub",
            generator_model="stub-model",
        )
        add_document(
            channel,
            title="Proxy notes",
            pages=["Quire serves its channels over TLS through nginx."],
        )
        answers_key = create_api_key(
            actor=COMMAND_LINE, name="proxy test", channels=[channel]
        ).raw_key

    env = live.server_environment(quire_server.media, quire_server.conformance_key)
    env.update(
        PROXY_TRUSTED_HOPS="1",
        PROXY_TRUSTED_ADDRESSES="127.0.0.1",
        DJANGO_BEHIND_TLS_PROXY="true",
        DJANGO_SECURE_COOKIES="true",
        DJANGO_SECURE_SSL_REDIRECT="true",
        DJANGO_HSTS_SECONDS=str(HSTS_SECONDS),
        DJANGO_ALLOWED_HOSTS="localhost,127.0.0.1",
        DJANGO_CSRF_TRUSTED_ORIGINS=public,
        MCP_ALLOWED_ORIGINS=public,
        METRICS_ALLOWED_ADDRESSES=METRICS_READER,
        CHAT_MODEL_ENDPOINTS=json.dumps(endpoints),
    )
    quire, direct = live.start_server(env, workers=1)

    site = render_site(
        {
            "QUIRE_SERVER_NAME": "localhost",
            "QUIRE_PUBLIC_HOST": f"localhost:{https_port}",
            "QUIRE_HTTPS_LISTEN": f"127.0.0.1:{https_port}",
            "QUIRE_HTTP_LISTEN": f"127.0.0.1:{http_port}",
            "QUIRE_CERTIFICATE": str(certificate),
            "QUIRE_CERTIFICATE_KEY": str(key),
            "QUIRE_UPSTREAM": direct.removeprefix("http://"),
            "QUIRE_REQUEST_MAX_BYTES": str(settings.REQUEST_MAX_BYTES),
            "QUIRE_MCP_MAX_BODY_BYTES": str(settings.MCP_MAX_BODY_BYTES),
            "QUIRE_MAX_CONNECTIONS_PER_CLIENT": str(
                settings.HTTP_MAX_CONNECTIONS_PER_CLIENT
            ),
        }
    )
    (prefix / "quire.conf").write_text(site)
    user = pwd.getpwuid(os.geteuid()).pw_name
    (prefix / "nginx.conf").write_text(WRAPPER.format(prefix=prefix, user=user))
    log = prefix / "error.log"
    command = [NGINX, "-p", str(prefix), "-c", str(prefix / "nginx.conf")]
    command += ["-e", str(log)]
    checked = subprocess.run([*command, "-t"], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    nginx = subprocess.Popen(command, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(https_port, nginx, log)
        yield Proxied(
            public=public,
            plain=f"http://localhost:{http_port}",
            direct=direct,
            certificate=certificate,
            demo_slug=quire_server.demo_slug,
            demo_key=quire_server.demo_key,
            answers_key=answers_key,
            release_answer=release,
            chat_requests=chat_requests,
        )
    finally:
        release.set()
        nginx.terminate()
        nginx.wait(timeout=15)
        live.stop_server(quire)
        chat.shutdown()
        chat.server_close()
        with django_db_blocker.unblock():
            ApiKey.objects.filter(name="proxy test").delete()
            Channel.objects.filter(slug=ANSWERS_SLUG).delete()
        shutil.rmtree(prefix, ignore_errors=True)


def test_oauth_discovery_and_challenges_carry_the_public_https_url(proxied):
    """Protected-resource and authorization-server (sign-in) metadata and the
    401's challenge name https://localhost:<port>, never Quire's own address."""
    public, slug = proxied.public, proxied.demo_slug
    with proxied.client() as client:
        resource = client.get(f"/.well-known/oauth-protected-resource/mcp/{slug}")
        signin = client.get("/.well-known/oauth-authorization-server")
        refused = client.post(
            f"/mcp/{slug}",
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            headers={"Accept": "application/json, text/event-stream"},
        )
    assert resource.status_code == 200, resource.text
    assert resource.json()["resource"] == f"{public}/mcp/{slug}"
    assert resource.json()["authorization_servers"] == [public]
    assert resource.json()["resource_documentation"] == f"{public}/signin/"
    metadata = signin.json()
    assert metadata["issuer"] == public
    assert metadata["authorization_endpoint"] == f"{public}/oauth/authorize/"
    assert metadata["token_endpoint"] == f"{public}/oauth/token/"
    assert metadata["registration_endpoint"] == f"{public}/oauth/register/"
    assert refused.status_code == 401
    challenge = refused.headers["WWW-Authenticate"]
    prm = f"{public}/.well-known/oauth-protected-resource/mcp/{slug}"
    assert f'resource_metadata="{prm}"' in challenge
    assert "127.0.0.1" not in json.dumps([resource.json(), metadata, challenge])


def test_hsts_secure_cookies_and_the_https_redirect(proxied):
    """Over TLS: one Strict-Transport-Security header, the sign-in form's CSRF
    cookie marked Secure; plain http is sent to the public https URL."""
    with proxied.client() as client:
        page = client.get("/signin/login/")
    assert page.status_code == 200
    assert page.headers.get_list("strict-transport-security") == [
        f"max-age={HSTS_SECONDS}"
    ]
    cookies = page.headers.get_list("set-cookie")
    assert cookies and all("; Secure" in cookie for cookie in cookies), cookies
    redirect = httpx.get(f"{proxied.plain}/signin/login/?next=/admin/", timeout=10)
    assert redirect.status_code == 301
    assert (
        redirect.headers["location"] == f"{proxied.public}/signin/login/?next=/admin/"
    )


def sdk_client(proxied) -> Client:
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {proxied.demo_key}"},
        verify=proxied.tls(),
        timeout=60,
    )
    url = f"{proxied.public}/mcp/{proxied.demo_slug}"
    return Client(streamable_http_client(url, http_client=http), mode=MODERN)


def test_sdk_client_calls_a_tool_and_its_citation_link_opens_through_nginx(
    proxied,
):
    """The MCP SDK over https: a tool call answers, and get_citation_url hands
    out an https link on the public host that opens the PDF through nginx."""

    async def tour() -> tuple[dict, str]:
        async with sdk_client(proxied) as client:
            listing = await client.call_tool(
                "list_documents", {"metadata_filter": {"kind": "handbook"}}
            )
            document = listing.structured_content["results"][0]["id"]
            urls = await client.call_tool(
                "get_citation_url", {"document_ids": [document], "page_number": 1}
            )
            return listing.structured_content, urls.structured_content[str(document)]

    listing, link = asyncio.run(tour())
    assert listing["total_count"] >= 1
    assert link.startswith(f"{proxied.public}/citations/"), link
    with proxied.client() as client:
        opened = client.get(link.split("#")[0])
    assert opened.status_code == 200
    assert opened.headers["content-type"] == "application/pdf"
    assert opened.content.startswith(b"%PDF")


def rag_search_message(query: str) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "rag_search",
            "arguments": {"query": query},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "proxy", "version": "1"},
                "progressToken": "through-nginx",
            },
        },
    }


def test_rag_search_streams_through_nginx_unbuffered(proxied):
    """The progress notification reaches the client while the chat model is
    still held back (a buffering proxy would hold it until the answer), then
    the answer arrives, its citation link on the public https URL."""
    headers = {
        "Authorization": f"Bearer {proxied.answers_key}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "rag_search",
    }
    events: list[dict] = []
    with proxied.client() as client:
        try:
            with client.stream(
                "POST",
                f"/mcp/{ANSWERS_SLUG}",
                json=rag_search_message("How does Quire serve its channels?"),
                headers=headers,
            ) as response:
                assert response.status_code == 200
                assert response.headers["content-type"] == "text/event-stream"
                for line in response.iter_lines():
                    if not line.startswith("data: "):
                        continue
                    events.append(json.loads(line.removeprefix("data: ")))
                    if len(events) == 1:
                        assert not proxied.release_answer.is_set()
                        proxied.release_answer.set()
        finally:
            proxied.release_answer.set()
    first, *_, last = events
    assert first["method"] == "notifications/progress"
    assert first["params"]["progressToken"] == "through-nginx"
    assert len(proxied.chat_requests) == 1
    answer = last["result"]["structuredContent"]
    assert "Quire answers through the proxy" in answer["answer"]
    (citation,) = answer["citations"]
    assert citation["url"].startswith(f"{proxied.public}/citations/")
    with proxied.client() as client:
        assert client.get(citation["url"].split("#")[0]).status_code == 200


def outsider() -> httpx.Client:
    """A client that reaches Quire's port directly, from an address that is not
    the proxy's."""
    transport = httpx.HTTPTransport(local_address=OUTSIDER)
    return httpx.Client(transport=transport, timeout=30)


def test_forwarded_headers_count_only_from_the_proxy(proxied):
    """Sent straight to Quire from another address, X-Forwarded-Proto and
    X-Forwarded-For are dropped: Quire sees plain http and redirects to https,
    /metrics included. The same headers from the proxy's address are believed
    (/metrics is served to the forwarded address it allows), and through nginx
    a client's own X-Forwarded-For entry is never the one Quire reads."""
    forged = {"X-Forwarded-Proto": "https", "X-Forwarded-For": METRICS_READER}
    metadata = "/.well-known/oauth-authorization-server"
    with outsider() as client:
        scheme = client.get(f"{proxied.direct}{metadata}", headers=forged)
        metrics = client.get(f"{proxied.direct}/metrics", headers=forged)
    assert scheme.status_code == 301
    https_direct = proxied.direct.replace("http://", "https://")
    assert scheme.headers["location"] == https_direct + metadata
    assert metrics.status_code == 301  # believed, it would be served (below)

    with httpx.Client(timeout=30) as proxy_address:
        believed = proxy_address.get(f"{proxied.direct}{metadata}", headers=forged)
        metrics = proxy_address.get(f"{proxied.direct}/metrics", headers=forged)
    assert believed.status_code == 200
    assert believed.json()["issuer"] == https_direct
    assert metrics.status_code == 200

    with proxied.client() as client:
        through = client.get("/metrics", headers={"X-Forwarded-For": METRICS_READER})
        downgraded = client.get(metadata, headers={"X-Forwarded-Proto": "http"})
    assert through.status_code == 404
    assert downgraded.json()["issuer"] == proxied.public


def test_a_body_over_quires_limits_is_refused_by_nginx(proxied):
    """MCP_MAX_BODY_BYTES on /mcp/ and REQUEST_MAX_BYTES elsewhere: one byte
    more is nginx's 413 (an HTML page; Quire's own 413 is JSON); a body at the
    limit reaches Quire, which answers it."""
    path = f"/mcp/{proxied.demo_slug}"
    headers = {
        "Authorization": f"Bearer {proxied.demo_key}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    limit = settings.MCP_MAX_BODY_BYTES
    with proxied.client() as client:
        over = client.post(path, content=b" " * (limit + 1), headers=headers)
        at = client.post(path, content=b" " * limit, headers=headers)
    assert over.status_code == 413
    assert over.headers["content-type"].startswith("text/html")
    assert at.status_code != 413
    assert at.headers["content-type"].startswith("application/json")

    # An upload's declared length is refused before any of its bytes are sent.
    declared = declared_length_answer(proxied, settings.REQUEST_MAX_BYTES + 1)
    assert declared.startswith("HTTP/1.1 413"), declared


def declared_length_answer(proxied, length: int) -> str:
    """nginx's status line for a POST that declares `length` bytes and sends
    none of them."""
    host, port = "localhost", int(proxied.public.rsplit(":", 1)[1])
    request = (
        f"POST /api/channels HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Content-Type: application/octet-stream\r\nContent-Length: {length}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=30) as raw:
        with proxied.tls().wrap_socket(raw, server_hostname=host) as sock:
            sock.sendall(request.encode())
            return sock.recv(4096).decode(errors="replace")
