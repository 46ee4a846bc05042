"""Real MCP clients against a live uvicorn server (two workers) and the demo
channel: the official SDK client in both eras, fastmcp, and the MCP Inspector CLI."""

import asyncio
import json
import re
import subprocess

import httpx
import httpx2
import pytest
from fastmcp import Client as FastClient
from fastmcp.client.transports import StreamableHttpTransport
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mcp_endpoint.tests.node import INSPECTOR, node_env, require_node

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

QUIRE_TOOLS = [
    "list_documents",
    "get_pages",
    "get_citation_url",
    "retrieve_text_chunks",
    "rag_search",
    "submit_feedback",
]


def sdk_client(server, mode: str) -> Client:
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {server.demo_key}"}, timeout=120
    )
    return Client(streamable_http_client(server.demo_url, http_client=http), mode=mode)


async def sdk_tour(server, mode: str) -> dict:
    """List tools (following cursors), call every tool, read both resources."""
    seen: dict = {}
    async with sdk_client(server, mode) as client:
        seen["protocol_version"] = client.protocol_version
        tools, cursor = [], None
        while True:
            page = await client.list_tools(cursor=cursor)
            tools += page.tools
            cursor = page.next_cursor
            if not cursor:
                break
        seen["tools"] = [tool.name for tool in tools]

        titles, offset = [], 0
        while True:
            result = await client.call_tool(
                "list_documents", {"offset": offset, "limit": 2}
            )
            page = result.structured_content
            titles += [row["title"] for row in page["results"]]
            seen.setdefault("provenance", set()).update(
                (row["source"], row["source_url"]) for row in page["results"]
            )
            offset += 2
            if offset >= page["total_count"]:
                break
        seen["titles"] = titles
        seen["total"] = page["total_count"]

        pdfs = await client.call_tool(
            "list_documents", {"metadata_filter": {"kind": "regulation"}}
        )
        document = pdfs.structured_content["results"][0]["id"]
        pages = await client.call_tool(
            "get_pages", {"document_id": document, "page_start": 1, "page_end": 2}
        )
        seen["page_blocks"] = [block.type for block in pages.content]
        seen["page_label"] = pages.content[0].text
        urls = await client.call_tool(
            "get_citation_url", {"document_ids": [document], "page_number": 2}
        )
        seen["citation_url"] = urls.structured_content[str(document)]
        chunks = await client.call_tool(
            "retrieve_text_chunks", {"query": "self-locking nuts", "limit": 3}
        )
        seen["chunks"] = chunks.structured_content["chunks"]
        answer = await client.call_tool(
            "rag_search",
            {"query": "What does the proposed airworthiness directive require?"},
        )
        seen["answer"] = answer.structured_content
        feedback = await client.call_tool(
            "submit_feedback",
            {"query": "q", "answer": "a", "score": 4, "comment": f"SDK {mode}"},
        )
        seen["feedback_id"] = feedback.structured_content["feedback_id"]
        failed = await client.call_tool(
            "get_pages", {"document_id": document, "page_start": 3, "page_end": 1}
        )
        seen["tool_error"] = (failed.is_error, failed.content[0].text)
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("no_such_tool", {})
        seen["unknown_tool"] = str(unknown.value)

        stats = await client.read_resource("index://stats")
        seen["stats"] = json.loads(stats.contents[0].text)
        metadata = await client.read_resource(f"documents://metadata/{document}")
        seen["metadata"] = json.loads(metadata.contents[0].text)
        seen["resources"] = [r.uri for r in (await client.list_resources()).resources]
        templates = await client.list_resource_templates()
        seen["templates"] = [t.uri_template for t in templates.resource_templates]
        with pytest.raises(MCPError) as missing:
            await client.read_resource("documents://metadata/1,,2")
        seen["bad_resource"] = str(missing.value)
    return seen


def check_tour(seen: dict) -> None:
    assert seen["tools"] == QUIRE_TOOLS
    assert seen["total"] == 6 and len(set(seen["titles"])) == 6
    # Each page: its label, its text, its image; then the revision line.
    assert seen["page_blocks"] == [
        *["text", "text", "image"] * 2,
        "text",
    ]
    assert re.fullmatch(r"\[Document \d+, Page 1\]", seen["page_label"])
    assert "/citations/" in seen["citation_url"]
    assert seen["citation_url"].endswith("#page=2")
    assert seen["chunks"] and all(c["text"] for c in seen["chunks"])
    assert re.search(r"\[Document \d+, Page \d+\]", seen["answer"]["answer"])
    assert seen["answer"]["citations"]
    assert seen["tool_error"][0] is True and "page_start" in seen["tool_error"][1]
    assert "Unknown tool: no_such_tool" in seen["unknown_tool"]
    assert seen["stats"]["documents"]["ready"] == 6
    assert list(seen["metadata"].values())[0]["kind"] == "regulation"
    # The demo's documents are uploads: no source; the regulation's own
    # source_url field keeps its value in the metadata resource.
    assert seen["provenance"] == {(None, None)}
    regulation = list(seen["metadata"].values())[0]
    assert regulation["source"] is None
    assert regulation["source_url"] == "https://www.federalregister.gov/d/2020-17221"
    assert seen["resources"] == ["index://stats"]
    assert seen["templates"] == ["documents://metadata/{document_ids}"]
    assert "comma" in seen["bad_resource"]


def test_sdk_client_modern_era_full_tour(quire_server):
    """The SDK client pinned to 2026-07-28 lists, calls every tool, pages through
    documents and reads both resources."""
    seen = asyncio.run(sdk_tour(quire_server, "2026-07-28"))
    assert seen["protocol_version"] == "2026-07-28"
    check_tour(seen)


def test_sdk_client_legacy_era_full_tour(quire_server):
    """The SDK client in the handshake era does the same tour."""
    seen = asyncio.run(sdk_tour(quire_server, "legacy"))
    assert seen["protocol_version"] == "2025-11-25"
    check_tour(seen)


def test_sdk_client_auto_mode_discovers_modern(quire_server):
    """mode="auto" probes server/discover and settles on 2026-07-28."""

    async def probe():
        async with sdk_client(quire_server, "auto") as client:
            await client.list_tools()
            return client.protocol_version

    assert asyncio.run(probe()) == "2026-07-28"


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
def test_fastmcp_client_full_tour(quire_server, mode):
    """fastmcp lists (auto-paginating), calls every tool and reads resources."""

    async def tour():
        transport = StreamableHttpTransport(
            quire_server.demo_url,
            headers={"Authorization": f"Bearer {quire_server.demo_key}"},
        )
        async with FastClient(transport, mode=mode) as client:
            tools = [tool.name for tool in await client.list_tools()]
            listing = await client.call_tool("list_documents", {"limit": 3})
            document = listing.structured_content["results"][0]["id"]
            pages = await client.call_tool(
                "get_pages",
                {
                    "document_id": document,
                    "page_start": 1,
                    "page_end": 1,
                    "type": "text",
                },
            )
            urls = await client.call_tool(
                "get_citation_url", {"document_ids": [document]}
            )
            chunks = await client.call_tool(
                "retrieve_text_chunks", {"query": "API keys"}
            )
            answer = await client.call_tool(
                "rag_search", {"query": "How do API keys work in Quire?"}
            )
            feedback = await client.call_tool(
                "submit_feedback", {"query": "q", "answer": "a", "score": 2}
            )
            stats = await client.read_resource("index://stats")
            metadata = await client.read_resource(f"documents://metadata/{document}")
            with pytest.raises(Exception, match="At most"):
                await client.call_tool(
                    "get_pages",
                    {"document_id": document, "page_start": 1, "page_end": 50},
                )
            return {
                "tools": tools,
                "listing": listing.structured_content,
                "pages": pages.content,
                "urls": urls.structured_content,
                "chunks": chunks.structured_content["chunks"],
                "answer": answer.structured_content,
                "feedback": feedback.structured_content,
                "stats": json.loads(stats[0].text),
                "metadata": json.loads(metadata[0].text),
            }

    seen = asyncio.run(tour())
    assert seen["tools"] == QUIRE_TOOLS
    assert seen["listing"]["limit"] == 3 and len(seen["listing"]["results"]) == 3
    # The page's label and text, then the revision line.
    assert [block.type for block in seen["pages"]] == ["text", "text", "text"]
    assert len(seen["urls"]) == 1
    assert seen["chunks"]
    assert seen["answer"]["answer"]
    assert seen["feedback"]["feedback_id"] > 0
    assert seen["stats"]["documents"]["total"] == 6
    assert len(seen["metadata"]) == 1


def test_signed_link_from_live_server_opens_the_pdf(quire_server):
    """A citation link handed out over MCP downloads the original PDF."""

    async def link():
        async with sdk_client(quire_server, "2026-07-28") as client:
            listing = await client.call_tool(
                "list_documents", {"metadata_filter": {"kind": "handbook"}}
            )
            document = listing.structured_content["results"][0]["id"]
            urls = await client.call_tool(
                "get_citation_url", {"document_ids": [document], "page_number": 1}
            )
            return urls.structured_content[str(document)]

    url = asyncio.run(link())
    response = httpx.get(url.split("#")[0], timeout=30)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/pdf"
    assert response.content.startswith(b"%PDF")
    assert httpx.get(url.split("#")[0][:-3] + "xyz", timeout=30).status_code == 403


def modern_list_message() -> dict:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/list",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        },
    }


def modern_headers(server) -> list[tuple[str, str]]:
    return [
        ("Authorization", f"Bearer {server.demo_key}"),
        ("Accept", "application/json"),
        ("Content-Type", "application/json"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/list"),
    ]


@pytest.mark.parametrize("with_key", [True, False])
def test_a_trailing_slash_gets_the_same_answer_from_the_live_server(
    quire_server, with_key
):
    """Through the whole stack (the checks made before the body is read
    included), /mcp/<slug>/ answers as /mcp/<slug> does: JSON-RPC, not an HTML
    page."""
    headers = dict(modern_headers(quire_server))
    if not with_key:
        del headers["Authorization"]
    body = json.dumps(modern_list_message())
    plain, slashed = (
        httpx.post(url, content=body, headers=headers, timeout=30)
        for url in (quire_server.demo_url, quire_server.demo_url + "/")
    )
    assert plain.status_code == slashed.status_code == (200 if with_key else 401)
    assert slashed.headers["content-type"] == "application/json"
    assert slashed.json() == plain.json()


def test_duplicate_routing_headers_are_refused(quire_server):
    """A routing header sent twice is -32020 (read from the raw header lines)."""
    headers = [*modern_headers(quire_server), ("Mcp-Method", "tools/list")]
    response = httpx.post(
        quire_server.demo_url,
        content=json.dumps(modern_list_message()),
        headers=headers,
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32020


def test_rate_limit_counter_is_shared_by_the_workers(quire_server):
    """Requests spread over both uvicorn workers all land in one database
    counter per key."""
    from django.db.models import Sum

    from documents.access import digest_key
    from documents.models import ApiKey, RateLimitWindow

    key = ApiKey.objects.get(digest=digest_key(quire_server.demo_key))
    counted = RateLimitWindow.objects.filter(subject=f"key:{key.pk}")

    def total() -> int:
        return counted.aggregate(n=Sum("count"))["n"] or 0

    before = total()
    for _ in range(12):  # a new connection each time, so both workers answer
        response = httpx.post(
            quire_server.demo_url,
            content=json.dumps(modern_list_message()),
            headers=modern_headers(quire_server),
        )
        assert response.status_code == 200
    assert total() - before == 12


def inspector(server, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            "npx",
            "-y",
            INSPECTOR,
            "--cli",
            server.demo_url,
            "--transport",
            "http",
            "--header",
            f"Authorization: Bearer {server.demo_key}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=node_env(),
    )


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_inspector_cli_lists_calls_and_reads(quire_server, era):
    """The MCP Inspector CLI lists tools, calls one and reads a resource in
    both eras; a tool error exits with 5."""
    require_node()
    era_args = ["--protocol-era", era]
    listed = inspector(quire_server, *era_args, "--method", "tools/list")
    assert listed.returncode == 0, listed.stderr
    names = [tool["name"] for tool in json.loads(listed.stdout)["tools"]]
    assert names == QUIRE_TOOLS
    called = inspector(
        quire_server,
        *era_args,
        "--method",
        "tools/call",
        "--tool-name",
        "retrieve_text_chunks",
        "--tool-args-json",
        json.dumps({"query": "lock nuts", "limit": 2}),
    )
    assert called.returncode == 0, called.stderr
    assert "self-locking" in called.stdout.lower() or "nut" in called.stdout.lower()
    read = inspector(
        quire_server, *era_args, "--method", "resources/read", "--uri", "index://stats"
    )
    assert read.returncode == 0, read.stderr
    assert "embedding_model" in read.stdout
    failed = inspector(
        quire_server,
        *era_args,
        "--method",
        "tools/call",
        "--tool-name",
        "get_pages",
        "--tool-args-json",
        json.dumps({"document_id": 1, "page_start": 2, "page_end": 1}),
    )
    assert failed.returncode == 5


def test_inspector_cli_sees_the_page_viewer_only_when_it_claims_apps(quire_server):
    """The Inspector CLI's --app-info (2026-07-28, --advertise-apps) reports
    get_pages and rag_search linked to the viewer, with the resource's MIME
    type and its no-domain CSP, and the app-only show_page; without
    --advertise-apps the same probe finds no app at all."""
    require_node()
    era_args = ["--protocol-era", "modern", "--method", "tools/list", "--app-info"]
    probed = inspector(quire_server, *era_args, "--advertise-apps")
    assert probed.returncode == 0, probed.stderr
    apps = {
        info["toolName"]: info
        for info in map(json.loads, probed.stdout.splitlines())
        if info.get("hasApp")
    }
    assert set(apps) == {"get_pages", "rag_search", "show_page"}
    for info in apps.values():
        assert info["resourceUri"] == "ui://quire/page-viewer"
        assert info["resourceMimeType"] == "text/html;profile=mcp-app"
        assert info["csp"] == {"connectDomains": [], "resourceDomains": []}
    assert apps["show_page"]["visibility"] == ["app"]
    plain = inspector(quire_server, *era_args)
    assert not [
        line for line in plain.stdout.splitlines() if json.loads(line).get("hasApp")
    ], plain.stdout
