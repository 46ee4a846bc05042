"""docs/mcp-clients.md runs as written: each snippet is taken from the file and
run against the live server (its address and the demo key put in for
http://127.0.0.1:8000 and qk_…): the shell lines with the MCP Inspector CLI,
every `mcpServers` entry through the Inspector (`--config`; the Claude Desktop
one starts mcp-remote), the Python with the SDK and fastmcp; and the Inspector's
web UI, started with the documented command, is walked through in Chromium."""

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from mcp_endpoint.tests import live
from mcp_endpoint.tests.node import INSPECTOR, NPM_CACHE, node_env, require_node

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

DOC = live.REPO / "docs" / "mcp-clients.md"
DOC_URL = "http://127.0.0.1:8000"
DOC_KEY = "qk_…"
# A fenced block, and the HTML comment right above it, if any.
FENCE = re.compile(
    r"(?:<!-- (?P<note>[^\n]*?) -->\n)?^```(?P<lang>\w*)\n(?P<body>.*?)^```$",
    re.S | re.M,
)
QUIRE_TOOLS = {
    "list_documents",
    "get_pages",
    "get_citation_url",
    "retrieve_text_chunks",
    "rag_search",
    "submit_feedback",
}
WEB_UI = "not run: starts the web UI"
# The sign-in snippet needs a browser: its own test gives it a scripted one.
SIGNS_IN = "signs in:"
# What each Python snippet prints, found by the call it makes.
PRINTS = {
    "rag_search": r"\['list_documents', .*'submit_feedback'\]\n"
    r".*\[Document \d+, Page \d+\]",
    "list_documents": r"^(\d+ .+\n){5}$",
}


@dataclass(frozen=True)
class Snippet:
    lang: str
    note: str
    body: str
    line: int

    @property
    def label(self) -> str:
        return f"{self.lang}@line{self.line}"

    def for_server(self, server) -> str:
        return self.body.replace(DOC_URL, server.base_url).replace(
            DOC_KEY, server.demo_key
        )


def snippets(lang: str | None = None, *, runnable: bool = True) -> list[Snippet]:
    text = DOC.read_text(encoding="utf-8")
    found = [
        Snippet(
            match["lang"],
            match["note"] or "",
            match["body"],
            text.count("\n", 0, match.start("body")) + 1,
        )
        for match in FENCE.finditer(text)
    ]
    return [
        snippet
        for snippet in found
        if (lang is None or snippet.lang == lang)
        and (not runnable or not snippet.note.startswith(("not run", SIGNS_IN)))
    ]


def each(lang: str):
    return pytest.mark.parametrize(
        "snippet", snippets(lang), ids=lambda snippet: snippet.label
    )


def run(
    command: list[str], *, timeout: float, **options
) -> subprocess.CompletedProcess:
    """subprocess.run in a session of its own, so whatever the command starts
    (npx, a web server) goes when it times out."""
    with subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **options,
    ) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            _, stderr = process.communicate()
            raise AssertionError(f"{command[:3]} timed out: {stderr}") from None
        finally:
            try:  # nothing it started outlives it
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def client_env() -> dict[str, str]:
    env = node_env()
    env.pop("DJANGO_SETTINGS_MODULE", None)  # the snippets are not Django code
    return env


def test_every_snippet_is_run_or_says_why_not():
    """Shell, Python and JSON blocks are all run by the tests below, unless a
    `<!-- not run: why -->` note stands above them; the placeholders the tests
    replace are the ones the page asks readers to replace."""
    blocks = snippets(runnable=False)
    assert {snippet.lang for snippet in blocks} <= {"", "bash", "json", "python"}
    for snippet in blocks:
        if snippet.lang == "json":
            assert "mcpServers" in json.loads(snippet.body), snippet.label
        if snippet.lang and not snippet.note:
            assert DOC_URL in snippet.body, snippet.label
    assert len(snippets("bash")) >= 1
    assert len(snippets("json")) == 2
    assert len(snippets("python")) == 2
    assert [s.note for s in snippets("bash", runnable=False) if s.note] == [
        "not run: starts the web UI; test_client_docs.py launches it and walks "
        "through it in Chromium"
    ]


@each("bash")
def test_shell_snippets_run_as_written(quire_server, snippet):
    """Each shell block (the Inspector CLI: tools/list, tools/call, a resource
    in the 2026-07-28 era) exits 0 and prints what each call returned."""
    require_node()
    done = run(
        ["bash", "-euo", "pipefail", "-c", snippet.for_server(quire_server)],
        cwd=live.REPO,
        env=client_env(),
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert QUIRE_TOOLS <= set(re.findall(r'"name": "(\w+)"', done.stdout))
    assert "self-locking" in done.stdout.lower()
    assert "embedding_model" in done.stdout


def inspector_with_config(config: Path, name: str, *args: str) -> dict:
    """One Inspector CLI call through an `mcpServers` file; its JSON result.

    A stdio server (npx mcp-remote) starts with the Inspector's short default
    environment: the npm cache and CA settings of this machine go with it."""
    plumbing = [f"npm_config_cache={NPM_CACHE}", "npm_config_prefer_offline=true"]
    if os.environ.get("NODE_EXTRA_CA_CERTS"):
        plumbing.append(f"NODE_EXTRA_CA_CERTS={os.environ['NODE_EXTRA_CA_CERTS']}")
    command = ["npx", "-y", INSPECTOR, "--cli", "--config", str(config)]
    command += ["--server", name, "--connect-timeout", "120000"]
    for setting in plumbing:
        command += ["-e", setting]
    done = run([*command, *args], env=client_env(), timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@each("json")
def test_mcp_servers_entries_connect(quire_server, snippet, tmp_path):
    """Each `mcpServers` entry, saved as a file, connects through the Inspector
    (`--config`): the HTTP entry with its header, the Claude Desktop entry by
    starting mcp-remote with the key from its `env`."""
    require_node()
    config = tmp_path / "mcp.json"
    config.write_text(snippet.for_server(quire_server), encoding="utf-8")
    for name in json.loads(config.read_text())["mcpServers"]:
        if "mcp-remote" in snippet.body:  # fetched once, before the clock starts
            version = re.search(r"mcp-remote@[\d.]+", snippet.body).group()
            fetched = run(
                ["npx", "-y", "-p", version, "node", "-e", "0"],
                env=client_env(),
                timeout=300,
            )
            assert fetched.returncode == 0, fetched.stderr
        listed = inspector_with_config(config, name, "--method", "tools/list")
        assert QUIRE_TOOLS <= {tool["name"] for tool in listed["tools"]}
        stats = inspector_with_config(
            config, name, "--method", "resources/read", "--uri", "index://stats"
        )
        assert json.loads(stats["contents"][0]["text"])["documents"]["ready"] == 6


@each("python")
def test_python_snippets_run_as_written(quire_server, snippet, tmp_path):
    """Each Python block runs with the SDK and fastmcp the tests install, and
    prints what it fetched: tool names and a cited answer, or documents."""
    done = run(
        [sys.executable, "-c", snippet.for_server(quire_server)],
        cwd=tmp_path,
        env=client_env(),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    [expected] = [
        shape for call, shape in PRINTS.items() if f'"{call}"' in snippet.body
    ]
    assert re.search(expected, done.stdout, re.S), done.stdout


class InspectorWeb:
    """The Inspector's web UI, started as the page says, on free ports."""

    def __init__(self, command: str, home: Path):
        env = client_env() | {
            "HOME": str(home),  # its own server list, not the developer's
            "CLIENT_PORT": str(live.free_port()),
            "MCP_SANDBOX_PORT": str(live.free_port()),
            "MCP_AUTO_OPEN_ENABLED": "false",
            "MCP_INSPECTOR_SECRET_STORE": "memory",
            "npm_config_prefer_offline": "true",
        }
        self.process = subprocess.Popen(
            shlex.split(command),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.output = ""
        deadline = time.monotonic() + 180
        while "Auth token:" not in self.output:
            assert self.process.poll() is None, self.output
            assert time.monotonic() < deadline, self.output
            self.output += self.process.stdout.readline()
        self.url = re.search(r"http://127\.0\.0\.1:\d+\?\S+", self.output).group()

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def connect_and_search(page, card: str) -> str:
    """Steps 1 and 2 of the page: connect, then run retrieve_text_chunks."""
    page.get_by_label(f'Connect or disconnect "{card}"').check(force=True)
    page.get_by_text("Connected", exact=True).wait_for(timeout=30_000)
    assert page.get_by_text("MCP 2025-11-25").is_visible()
    page.get_by_text("Tools", exact=True).first.click()
    page.get_by_text("Tools (6)").wait_for()
    page.get_by_text("retrieve_text_chunks", exact=True).click()
    page.get_by_label("query").first.fill("self-locking nuts")
    page.get_by_role("button", name="Execute Tool").click()
    page.get_by_text("Results", exact=True).wait_for(timeout=30_000)
    page.get_by_text('"chunks"').first.wait_for()
    return page.inner_text("body")


def test_inspector_web_ui_walkthrough(quire_server, tmp_path):
    """The web UI started with the documented command has the server filled in
    (header included): connecting and running retrieve_text_chunks returns
    passages, and Resources shows the stats and the metadata template. Added by
    hand, a server has no header until it is set in the card's Settings →
    Custom Headers, as the page says."""
    from playwright.sync_api import sync_playwright

    from tests_browser.conftest import CHROMIUM, CHROMIUM_ARGS

    require_node()
    [launch] = [
        s for s in snippets("bash", runnable=False) if s.note.startswith(WEB_UI)
    ]
    command = launch.for_server(quire_server).replace("\\\n", " ")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
        )
        try:
            ad_hoc = InspectorWeb(command, tmp_path / "ad-hoc")
            try:
                page = browser.new_page(viewport={"width": 1440, "height": 1000})
                page.set_default_timeout(20_000)
                page.goto(ad_hoc.url)
                card = quire_server.base_url.split("//")[1]
                page.get_by_text("Read-only session").wait_for()
                shown = connect_and_search(page, card)
                assert "self-locking" in shown.lower()
                page.get_by_text("Resources", exact=True).first.click()
                page.get_by_text("Index statistics").wait_for()
                assert page.get_by_text("Document metadata").is_visible()
            finally:
                ad_hoc.stop()

            plain = command.split(" --server-url")[0]
            catalog = InspectorWeb(plain, tmp_path / "catalog")
            try:
                page = browser.new_page(viewport={"width": 1440, "height": 1000})
                page.set_default_timeout(20_000)
                page.goto(catalog.url)
                page.get_by_role("button", name="Add Servers").click()
                page.get_by_text("Add manually").click()
                dialog = page.get_by_role("dialog")
                dialog.get_by_label("Server ID").fill("quire-demo")
                dialog.get_by_label("Transport").click()
                page.get_by_role("option", name="streamable-http").click()
                dialog.get_by_label("URL").fill(quire_server.demo_url)
                assert dialog.locator("input[placeholder=Key]").count() == 0
                dialog.get_by_role("button", name="Add", exact=True).click()
                card = (
                    page.locator("div", has=page.get_by_text("quire-demo", exact=True))
                    .filter(has=page.get_by_role("button", name="Settings"))
                    .last
                )
                card.get_by_role("button", name="Settings").click()
                settings = page.get_by_role("dialog")
                settings.get_by_role("button", name="Custom Headers").click()
                settings.get_by_role("button", name="+ Add Header").click()
                settings.locator("input[placeholder=Key]").fill("Authorization")
                settings.locator("input[placeholder=Value]").fill(
                    f"Bearer {quire_server.demo_key}"
                )
                settings.get_by_role("button", name="Close").click()
                assert "self-locking" in connect_and_search(page, "quire-demo").lower()
            finally:
                catalog.stop()
        finally:
            browser.close()


def manage_shell(server, code: str, tmp_path: Path) -> str:
    """Run `code` in `manage.py shell` on the live server's database: its rows
    are committed where the server sees them (the test's own are not)."""
    env = live.server_environment(tmp_path / "media", server.conformance_key)
    done = run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=live.REPO,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


SIGN_IN_READER = """
from django.contrib.auth.models import User
from documents.models import Channel
person = User.objects.create_user("snippet-reader", password="pw-snippet-1")
Channel.objects.get(slug="{slug}").readers.add(person)
"""
ACTIVE_GRANTS = """
from documents.models import SignInGrant
print(list(SignInGrant.objects.filter(user__username="snippet-reader",
    revoked_at__isnull=True).values_list("channel__slug", flat=True)))
"""
LAST_AUDIT_EVENT = """
from documents.models import AuditEvent
print(AuditEvent.objects.order_by("-pk").values_list("pk", flat=True).first() or 0)
"""
# The reader (and with it its grants and tokens), the client the snippet
# registered (its redirect URI is the snippet's callback) and the audit rows
# of the sign-in: the live server committed them, and later tests count them.
REMOVE_READER = """
from django.contrib.auth.models import User
from oauth2_provider.models import get_application_model
from documents.models import AuditEvent
User.objects.filter(username="snippet-reader").delete()
get_application_model().objects.filter(redirect_uris__contains="127.0.0.1:33418").delete()
AuditEvent.objects.filter(pk__gt={last_event}).delete()
"""


def test_the_oauth_snippet_signs_in_as_written(quire_server, tmp_path):
    """The sign-in snippet, run as written with a scripted browser (BROWSER)
    that signs in as a reader of the channel and allows: it registers, gets a
    token and lists the tools; the grant is active from that token on."""
    [snippet] = [
        s for s in snippets("python", runnable=False) if s.note.startswith(SIGNS_IN)
    ]
    last_event = int(manage_shell(quire_server, LAST_AUDIT_EVENT, tmp_path).split()[-1])
    manage_shell(
        quire_server, SIGN_IN_READER.format(slug=quire_server.demo_slug), tmp_path
    )
    try:
        browser = Path(__file__).with_name("oauth_browser.py")
        env = {
            **client_env(),
            "BROWSER": f"{sys.executable} {browser} %s",
            "QUIRE_SIGNIN_USER": "snippet-reader",
            "QUIRE_SIGNIN_PASSWORD": "pw-snippet-1",
        }
        done = run(
            [sys.executable, "-c", snippet.for_server(quire_server)],
            cwd=tmp_path,
            env=env,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert "'rag_search'" in done.stdout and "'list_documents'" in done.stdout
        grants = manage_shell(quire_server, ACTIVE_GRANTS, tmp_path)
        assert grants.strip().splitlines()[-1] == repr([quire_server.demo_slug])
    finally:
        manage_shell(
            quire_server, REMOVE_READER.format(last_event=last_event), tmp_path
        )
