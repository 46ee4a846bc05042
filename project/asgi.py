"""ASGI entry point (uvicorn project.asgi:application).

Static files (the admin's CSS and JavaScript) are served by the application
itself, from the apps' static folders, so a single uvicorn process is a working
site; a deployment behind a proxy or CDN may serve STATIC_ROOT instead after
`manage.py collectstatic`. Requests are checked before their bodies are read
(project.prechecks), forwarded headers count only from the declared proxies
(project.forwarded), keys never reach the access log (project.logs), and the
lifespan's shutdown closes the MCP admission's pool (project.lifespan).
Traces are exported when the OTEL_* variables ask for them
(documents.telemetry.tracing).
"""

import os

import django
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
django.setup(set_prefix=False)

from documents.telemetry import tracing  # noqa: E402
from project.body_limit import BodyLimitMiddleware  # noqa: E402
from project.forwarded import ForwardedHeadersGuard  # noqa: E402
from project.lifespan import Lifespan  # noqa: E402
from project.logs import redact_access_log  # noqa: E402
from project.prechecks import QuireASGIHandler  # noqa: E402
from project.request_threads import ReusedRequestThreads  # noqa: E402


def build_application():
    """The ASGI stack; its handler reads the middleware settings when built."""
    return Lifespan(
        ForwardedHeadersGuard(
            ReusedRequestThreads(
                BodyLimitMiddleware(ASGIStaticFilesHandler(QuireASGIHandler()))
            )
        )
    )


redact_access_log()
tracing.configure_from_environment()
application = build_application()
