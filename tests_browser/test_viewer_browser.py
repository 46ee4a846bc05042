"""The page viewer (MCP App) the way a host loads it: the ext-apps SDK's host
side (AppBridge, from npm, pinned) in a small host page that Playwright serves
in Chromium, talking to a live Quire; rag_search through it shows the cited
PDF page with its quoted lines highlighted, the app-only tool turns pages, and
a key that loses the channel gets a refusal in the view."""

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from documents.access import COMMAND_LINE
from documents.models import ApiKey, Channel, Document
from documents.services.keys import create_api_key, update_api_key
from mcp_endpoint.tests.node import node_env, require_node
from tests_browser.conftest import ARTIFACTS

# django_db: the session needs the test database; what the test changes (the
# key and its channels) is committed from a thread of its own (committed() below)
# so the live server sees it.
pytestmark = [pytest.mark.slow, pytest.mark.django_db]

EXT_APPS = "@modelcontextprotocol/ext-apps@2.0.4"
ROLLDOWN = "rolldown@1.3.3"
HOST = "http://host.quire.test"
PDF = "faa-amt-handbook-self-locking-nuts.pdf"
QUESTION = "May self-locking nuts be reused?"

HOST_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Test host</title></head>
<body>
<iframe id="view" sandbox="allow-scripts" style="width:900px;height:900px"></iframe>
<script type="module">
import { AppBridge, PostMessageTransport } from "/bridge.js";
const CONFIG = __CONFIG__;
const APPS = {extensions: {"io.modelcontextprotocol/ui":
  {mimeTypes: ["text/html;profile=mcp-app"]}}};
let nextId = 0;
window.modelContext = [];
window.openedLinks = [];
async function rpc(method, params) {
  const headers = {"Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "Authorization": "Bearer " + CONFIG.key,
    "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method};
  const name = method === "resources/read" ? params.uri : params.name;
  if (name !== undefined) { headers["Mcp-Name"] = name; }
  const body = {jsonrpc: "2.0", id: ++nextId, method, params: {...params, _meta: {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": APPS}}};
  const response = await fetch(CONFIG.mcp, {method: "POST", headers,
    body: JSON.stringify(body)});
  const reply = await response.json().catch(() => ({}));
  if (!response.ok || reply.error) {
    const message = reply.error && reply.error.message;
    throw new Error(message || ("HTTP " + response.status));
  }
  return reply.result;
}
async function main() {
  const tools = (await rpc("tools/list", {})).tools;
  const linked = tools.find((tool) => tool.name === CONFIG.tool);
  const uri = linked._meta.ui.resourceUri;
  const resource = (await rpc("resources/read", {uri})).contents[0];
  const args = CONFIG.arguments;
  const result = await rpc("tools/call", {name: CONFIG.tool, arguments: args});
  window.toolResult = result;
  const iframe = document.getElementById("view");
  const bridge = new AppBridge(null, {name: "quire-test-host", version: "1.0.0"},
    {openLinks: {}, serverTools: {}, logging: {}});
  bridge.oncalltool = async (params) => rpc("tools/call", params);
  bridge.onupdatemodelcontext = async (params) => {
    window.modelContext.push(params); return {}; };
  bridge.onopenlink = async ({url}) => { window.openedLinks.push(url); return {}; };
  bridge.oninitialized = () => {
    bridge.sendToolInput({arguments: args});
    bridge.sendToolResult(result);
  };
  const frame = iframe.contentWindow;
  await bridge.connect(new PostMessageTransport(frame, frame));
  iframe.srcdoc = resource.text;
}
main().catch((error) => { document.title = "host failed: " + error.message; });
</script>
</body></html>
"""


@pytest.fixture(scope="module")
def bridge_bundle(tmp_path_factory) -> bytes:
    """AppBridge for the browser: the pinned ext-apps package bundled with
    rolldown (both from npm through npx and its cache)."""
    require_node()
    folder = tmp_path_factory.mktemp("bridge")
    (folder / "entry.mjs").write_text(
        "export { AppBridge, PostMessageTransport } from "
        '"@modelcontextprotocol/ext-apps/app-bridge";\n'
    )
    script = (
        'ln -s "$(dirname "$(command -v rolldown)")/.." node_modules && '
        "rolldown entry.mjs --format esm --platform browser -o bridge.js"
    )
    built = subprocess.run(
        ["npx", "-y", "-p", ROLLDOWN, "-p", EXT_APPS, "-c", script],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
        env=node_env(),
    )
    assert built.returncode == 0, built.stderr + built.stdout
    return (folder / "bridge.js").read_bytes()


def committed(function):
    """Run `function` on a connection of its own (autocommit), outside the
    test's transaction, so the live server sees what it writes."""

    def run():
        try:
            return function()
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(run).result()


@pytest.fixture
def viewer_key(site):
    """A committed key for the browser channel; deleted afterwards."""
    key = committed(
        lambda: create_api_key(
            actor=COMMAND_LINE,
            name="viewer host",
            channels=[Channel.objects.get(slug=site.slug)],
        )
    )
    yield key
    committed(lambda: ApiKey.objects.filter(pk=key.api_key.pk).delete())


def _serve(page, site, bundle: bytes, config: dict) -> None:
    host_page = HOST_PAGE.replace("__CONFIG__", json.dumps(config))

    def handle(route):
        path = route.request.url.removeprefix(HOST)
        if path == "/host.html":
            route.fulfill(body=host_page, content_type="text/html")
        elif path == "/bridge.js":
            route.fulfill(body=bundle, content_type="text/javascript")
        elif path.startswith("/mcp/"):
            headers = {k: v for k, v in route.request.headers.items() if k != "origin"}
            response = route.fetch(url=site.base_url + path, headers=headers)
            route.fulfill(response=response)
        else:
            route.fulfill(status=404, body="")

    page.context.route(f"{HOST}/**", handle)


def _open(page, site, bundle: bytes, key: str, tool: str, arguments: dict):
    config = {
        "key": key,
        "mcp": f"/mcp/{site.slug}",
        "tool": tool,
        "arguments": arguments,
    }
    _serve(page, site, bundle, config)
    page.goto(f"{HOST}/host.html")
    view = page.frame_locator("#view")
    view.locator("#page").wait_for(state="visible", timeout=30_000)
    assert not page.title().startswith("host failed"), page.title()
    return view


def _looking_at(page) -> str:
    return page.evaluate("window.modelContext")[-1]["content"][0]["text"]


def test_the_viewer_in_a_host_shows_turns_and_refuses(
    page, site, bridge_bundle, viewer_key
):
    """rag_search through the host shows the cited PDF page with the quote's
    lines highlighted and tells the model which page is open; get_pages of a
    document with several pages opens the viewer on its first page, and next
    page comes through the app-only tool; once the key loses the channel the
    next page is refused in the view."""
    document = site.document_ids[PDF]
    arguments = {"query": QUESTION, "document_ids": [document]}
    view = _open(page, site, bridge_bundle, viewer_key.raw_key, "rag_search", arguments)
    citation = page.evaluate("window.toolResult.structuredContent.citations[0]")
    where = view.locator("#where").text_content()
    assert where.startswith(f"Page {citation['page_number']} of ")
    assert "revision 1" in where
    assert view.locator("#image").is_visible()
    marks = view.locator("#marks rect")
    assert marks.count() >= 1
    box = marks.first.bounding_box()
    assert box is not None and box["width"] > 10 and box["height"] > 2
    label = f"[Document {document}, Page {citation['page_number']}]"
    assert label in _looking_at(page)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / "page-viewer.png")
    view.locator("#original").click()
    page.wait_for_function("window.openedLinks.length > 0")
    assert "/citations/" in page.evaluate("window.openedLinks[0]")

    counts = committed(
        lambda: {
            pk: Document.objects.get(pk=pk).page_count
            for pk in site.document_ids.values()
        }
    )
    several = next(pk for pk, count in counts.items() if (count or 0) > 1)
    arguments = {"document_id": several, "page_start": 1, "page_end": 1}
    view = _open(page, site, bridge_bundle, viewer_key.raw_key, "get_pages", arguments)
    assert view.locator("#where").text_content().startswith("Page 1 of ")
    view.locator("#next").click()
    view.locator("#where").filter(has_text="Page 2 of ").wait_for(timeout=15_000)
    assert f"[Document {several}, Page 2]" in _looking_at(page)

    key = viewer_key.api_key
    committed(
        lambda: update_api_key(
            api_key=key,
            actor=COMMAND_LINE,
            name=key.name,
            channels=[],
            scopes=key.scopes,
            expires_at=None,
        )
    )
    view.locator("#prev").click()
    refusal = view.locator("#status.refused")
    refusal.wait_for(timeout=15_000)
    assert "cannot be shown" in refusal.text_content()
    assert view.locator("#page").is_hidden()
