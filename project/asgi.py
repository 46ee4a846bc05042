"""ASGI entry point (uvicorn project.asgi:application).

Static files (the admin's CSS and JavaScript) are served by the application
itself, from the apps' static folders, so a single uvicorn process is a working
site; a deployment behind a proxy or CDN may serve STATIC_ROOT instead after
`manage.py collectstatic`.
"""

import os

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.asgi import get_asgi_application

from project.body_limit import BodyLimitMiddleware
from project.request_threads import ReusedRequestThreads

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
application = ReusedRequestThreads(
    BodyLimitMiddleware(ASGIStaticFilesHandler(get_asgi_application()))
)
