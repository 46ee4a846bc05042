"""The environment a test run shares with the servers and workers it starts.

A pytest plugin (pytest.ini loads it with `-p`), because it must run before
pytest-django imports the settings, which happens before any conftest. Settings
refuse to start with DEBUG off and no DJANGO_SECRET_KEY, as a deployment should;
tests run with DEBUG off, so a run signs with a key of its own, inherited by
every process it starts (a link signed here verifies in a live server).
"""

import os
import secrets

if not os.environ.get("DJANGO_SECRET_KEY"):
    os.environ["DJANGO_SECRET_KEY"] = secrets.token_urlsafe(50)
