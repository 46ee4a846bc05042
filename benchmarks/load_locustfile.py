"""Locust users for benchmarks/load.py: MCP agents calling one channel.

Each user has its own API key and speaks 2026-07-28 JSON over Streamable HTTP.
The mix per user: tools/list 1, retrieve_text_chunks 4, rag_search 2, get_pages 2
(text and image of one or two pages). A call fails unless it answers HTTP 200
with a JSON-RPC result that is not isError.
"""

import itertools
import json
import os
import random

from locust import FastHttpUser, between, task

CONFIG = json.loads(open(os.environ["QUIRE_LOAD_CONFIG"]).read())
MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}
_keys = itertools.cycle(CONFIG["keys"])
THINK = float(os.environ.get("QUIRE_LOAD_THINK", "1.0"))


class McpAgent(FastHttpUser):
    wait_time = between(THINK * 0.5, THINK * 1.5)

    def on_start(self):
        self.key = next(_keys)
        self.random = random.Random(self.key)
        self.next_id = 0

    def call(self, method: str, params: dict, name: str):
        self.next_id += 1
        body = {
            "jsonrpc": "2.0",
            "id": self.next_id,
            "method": method,
            "params": {**params, "_meta": META},
        }
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "Authorization": f"Bearer {self.key}",
            "MCP-Protocol-Version": MODERN,
            "Mcp-Method": method,
        }
        if method == "tools/call":
            headers["Mcp-Name"] = params["name"]
        with self.client.post(
            CONFIG["path"],
            data=json.dumps(body),
            headers=headers,
            name=name,
            catch_response=True,
        ) as response:
            if response.status_code != 200:
                response.failure(f"HTTP {response.status_code}: {response.text[:200]}")
                return
            try:
                reply = json.loads(response.text)
            except ValueError:
                response.failure("not JSON")
                return
            result = reply.get("result")
            if result is None:
                response.failure(f"JSON-RPC error {reply.get('error')}")
            elif result.get("isError"):
                response.failure(f"isError: {result['content'][0]['text'][:200]}")
            else:
                response.success()

    @task(1)
    def tools_list(self):
        self.call("tools/list", {}, "tools/list")

    @task(4)
    def retrieve_text_chunks(self):
        query = self.random.choice(CONFIG["queries"])
        arguments = {"query": query, "limit": 10}
        self.call(
            "tools/call",
            {"name": "retrieve_text_chunks", "arguments": arguments},
            "retrieve_text_chunks",
        )

    @task(2)
    def rag_search(self):
        query = self.random.choice(CONFIG["queries"])
        self.call(
            "tools/call",
            {"name": "rag_search", "arguments": {"query": query}},
            "rag_search",
        )

    @task(2)
    def get_pages(self):
        document_id, pages = self.random.choice(CONFIG["documents"])
        start = self.random.randint(1, pages)
        end = min(pages, start + self.random.randint(0, 1))
        arguments = {"document_id": document_id, "page_start": start, "page_end": end}
        self.call(
            "tools/call", {"name": "get_pages", "arguments": arguments}, "get_pages"
        )
