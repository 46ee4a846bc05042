"""ASGI application of the live test server: Quire plus the conformance fixtures.

Run by the test suite (and scripts/conformance.sh) as
`uvicorn mcp_endpoint.tests.live_app:application`. The conformance suites cannot
send an API key, so requests to the conformance channel that carry none get the
key from QUIRE_CONFORMANCE_KEY added here; the endpoint still checks it as usual.
"""

import os

from project.asgi import application as quire


def _register_fixtures() -> str:
    # After project.asgi: the fixtures import models, which need Django set up.
    from mcp_endpoint.tests import conformance_fixtures

    conformance_fixtures.register()
    return f"/mcp/{conformance_fixtures.CONFORMANCE_SLUG}"


CONFORMANCE_PATH = _register_fixtures()


async def application(scope, receive, send):
    key = os.environ.get("QUIRE_CONFORMANCE_KEY", "")
    if key and scope["type"] == "http" and scope["path"] == CONFORMANCE_PATH:
        headers = list(scope["headers"])
        names = {name.lower() for name, _ in headers}
        if b"authorization" not in names and b"api-key" not in names:
            headers.append((b"authorization", f"Bearer {key}".encode()))
            scope = {**scope, "headers": headers}
    await quire(scope, receive, send)
