"""A real local OpenAI-compatible /chat/completions endpoint for tests.

The `chat_model_server` fixture starts one per test; a test whose live Quire
server must know the endpoint before it starts (test_proxy) starts its own for
the module.
"""

import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LABEL = re.compile(r"\[Document \d+, Page \d+\]")


def start_chat_model_server(
    reply: Callable[[list[str]], str],
) -> tuple[ThreadingHTTPServer, str, list[dict]]:
    """A server whose answer text is `reply(labels)`, the labels being the
    `[Document <id>, Page <n>]` labels of the last user message; returns the
    server (shut it down when done), its base URL and the requests it got,
    each {"path", "headers", "body"}. `reply` runs in the request's own thread,
    so it may block until the test lets it answer."""
    requests: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server API)
            length = int(self.headers["Content-Length"])
            body = json.loads(self.rfile.read(length))
            requests.append(
                {
                    "path": self.path,
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "body": body,
                }
            )
            labels = LABEL.findall(body["messages"][-1]["content"])
            message = {"role": "assistant", "content": reply(labels)}
            payload = json.dumps(
                {
                    "id": "chatcmpl-test",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [
                        {"index": 0, "message": message, "finish_reason": "stop"}
                    ],
                    "usage": {
                        "prompt_tokens": 1,
                        "completion_tokens": 1,
                        "total_tokens": 2,
                    },
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_port}/v1", requests
