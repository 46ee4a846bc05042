"""Quire's HTTP protocol (project.http_guard) sends a response of known length
as one write, and every other response as uvicorn writes it: driven in-process
with uvicorn's own request cycle, a transport that records what is written."""

import asyncio

import pytest
from uvicorn.config import Config
from uvicorn.server import ServerState

from project.http_guard import GuardedHttpToolsProtocol


class RecordingTransport(asyncio.Transport):
    def __init__(self):
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data):
        self.writes.append(bytes(data))

    def close(self):
        self.closed = True

    def is_closing(self):
        return self.closed

    def get_extra_info(self, name, default=None):
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 50000)}.get(
            name, default
        )

    def pause_reading(self):
        pass

    def resume_reading(self):
        pass


def serve(app, request: bytes) -> RecordingTransport:
    """The writes of one request to `app` through the guarded protocol."""

    async def main():
        config = Config(app=app, http=GuardedHttpToolsProtocol, lifespan="off")
        config.load()
        protocol = GuardedHttpToolsProtocol(
            config=config, server_state=ServerState(), app_state={}
        )
        transport = RecordingTransport()
        protocol.connection_made(transport)
        protocol.data_received(request)
        for _ in range(50):
            await asyncio.sleep(0)
            if not protocol.server_state.tasks:
                break
        protocol.connection_lost(None)
        return transport

    return asyncio.run(main())


def responding(*messages, fail_after_start=False):
    async def app(scope, receive, send):
        for message in messages:
            await send(message)
        if fail_after_start:
            raise RuntimeError("the application failed after starting")

    return app


START = {
    "type": "http.response.start",
    "status": 200,
    "headers": [(b"content-type", b"application/json"), (b"content-length", b"2")],
}
BODY = {"type": "http.response.body", "body": b"{}"}
GET = b"GET /mcp/handbook HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def test_a_response_of_known_length_is_one_write():
    transport = serve(responding(START, BODY), GET)
    (write,) = transport.writes
    assert write.startswith(b"HTTP/1.1 200 OK\r\n")
    assert write.endswith(b"content-length: 2\r\n\r\n{}")


def test_a_response_in_several_parts_keeps_them_in_order():
    parts = [
        {**START, "headers": [(b"content-length", b"4")]},
        {"type": "http.response.body", "body": b"ab", "more_body": True},
        {"type": "http.response.body", "body": b"cd"},
    ]
    transport = serve(responding(*parts), GET)
    assert len(transport.writes) == 2
    assert transport.writes[0].endswith(b"\r\n\r\nab")
    assert transport.writes[1] == b"cd"


@pytest.mark.parametrize(
    "start, body, request_line",
    [
        # Chunked (a stream): the headers go at once, before any event.
        (
            {"type": "http.response.start", "status": 200, "headers": []},
            {"type": "http.response.body", "body": b"data", "more_body": True},
            b"GET / HTTP/1.1",
        ),
        # No body.
        (
            {
                "type": "http.response.start",
                "status": 202,
                "headers": [(b"content-length", b"0")],
            },
            {"type": "http.response.body", "body": b""},
            b"GET / HTTP/1.1",
        ),
        # HEAD: uvicorn writes no body, so nothing may wait for one.
        (START, BODY, b"HEAD / HTTP/1.1"),
    ],
    ids=["chunked", "empty", "head"],
)
def test_other_responses_send_their_headers_at_once(start, body, request_line):
    transport = serve(
        responding(start, body), request_line + b"\r\nHost: 127.0.0.1\r\n\r\n"
    )
    assert transport.writes[0].startswith(b"HTTP/1.1 ")
    assert transport.writes[0].endswith(b"\r\n\r\n")


def test_headers_held_for_a_body_that_never_comes_are_sent_before_the_close():
    transport = serve(responding(START, fail_after_start=True), GET)
    assert transport.closed
    (write,) = transport.writes
    assert write.startswith(b"HTTP/1.1 200 OK\r\n") and write.endswith(b"\r\n\r\n")
