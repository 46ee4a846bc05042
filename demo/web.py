"""The uvicorn command line that serves Quire, in one place.

`runquire`, the tests' live servers and the benchmarks all start uvicorn with
it, so what the tests exercise is what an operator runs (the README's
production command is this list).

- `--http project.http_guard:GuardedHttpToolsProtocol`: deadlines for slow
  clients and connection caps.
- `--no-proxy-headers`: by default uvicorn rewrites the client address and the
  scheme from `X-Forwarded-For`/`X-Forwarded-Proto` sent by any client at
  127.0.0.1 (`FORWARDED_ALLOW_IPS`), whatever PROXY_TRUSTED_HOPS says. Quire
  decides the address itself (documents.access.client_address, from
  PROXY_TRUSTED_HOPS alone) and the scheme through Django
  (SECURE_PROXY_SSL_HEADER, only behind a declared proxy).
- `--lifespan on`: project.lifespan answers it (Django has no lifespan
  events) and closes the MCP admission's pool at shutdown.
"""

import sys
from collections.abc import Sequence

APPLICATION = "project.asgi:application"
HTTP_PROTOCOL = "project.http_guard:GuardedHttpToolsProtocol"
UVICORN_OPTIONS = ("--http", HTTP_PROTOCOL, "--no-proxy-headers", "--lifespan", "on")


def uvicorn_command(
    app: str = APPLICATION,
    *,
    host: str = "127.0.0.1",
    port: int,
    workers: int = 1,
    options: Sequence[str] = (),
) -> list[str]:
    """The command that serves `app` on host:port with `workers` processes,
    plus extra uvicorn `options` (log level, access log)."""
    return [
        sys.executable,
        "-m",
        "uvicorn",
        app,
        "--host",
        host,
        "--port",
        str(port),
        "--workers",
        str(workers),
        *UVICORN_OPTIONS,
        *options,
    ]
