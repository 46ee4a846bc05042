"""Deployment settings come from the environment (issue 11 item 11)."""

import json
import os
import subprocess
import sys

from django.conf import settings

PRINT = (
    "import django, json; django.setup(); from django.conf import settings as s; "
    "print(json.dumps([s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, "
    "s.SECURE_HSTS_SECONDS, s.SECURE_HSTS_INCLUDE_SUBDOMAINS, "
    "s.SECURE_PROXY_SSL_HEADER, s.SECURE_SSL_REDIRECT, s.USE_X_FORWARDED_HOST, "
    "s.PROXY_TRUSTED_HOPS, sorted(s.CHAT_MODEL_ENDPOINTS)]))"
)


def read_settings(**environment: str):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "project.settings", **environment}
    completed = subprocess.run(
        [sys.executable, "-c", PRINT],
        env=env,
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return completed


def test_secure_cookies_hsts_and_proxy_settings_from_the_environment():
    completed = read_settings(
        DJANGO_SECURE_COOKIES="true",
        DJANGO_HSTS_SECONDS="31536000",
        DJANGO_HSTS_INCLUDE_SUBDOMAINS="true",
        DJANGO_BEHIND_TLS_PROXY="true",
        DJANGO_SECURE_SSL_REDIRECT="true",
        DJANGO_USE_X_FORWARDED_HOST="true",
        PROXY_TRUSTED_HOPS="1",
        CHAT_MODEL_ENDPOINTS=json.dumps(
            {"local": {"base_url": "http://127.0.0.1:11434/v1"}}
        ),
    )
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout.strip().splitlines()[-1]) == [
        True,
        True,
        31536000,
        True,
        ["HTTP_X_FORWARDED_PROTO", "https"],
        True,
        True,
        1,
        ["local"],
    ]


def test_a_bad_chat_endpoint_stops_start_up_naming_the_variable():
    completed = read_settings(
        CHAT_MODEL_ENDPOINTS='{"x": {"base_url": "file:///etc/passwd"}}'
    )
    assert completed.returncode != 0
    assert "CHAT_MODEL_ENDPOINTS['x'].base_url must be an http(s) URL" in (
        completed.stderr
    )


def test_forwarded_proto_and_host_need_a_declared_proxy():
    """Trusting X-Forwarded-Proto or -Host with PROXY_TRUSTED_HOPS=0 (no proxy
    in front, so any client could set them) stops start-up, naming the fix."""
    for variable in ("DJANGO_BEHIND_TLS_PROXY", "DJANGO_USE_X_FORWARDED_HOST"):
        completed = read_settings(**{variable: "true", "PROXY_TRUSTED_HOPS": "0"})
        assert completed.returncode != 0
        assert "set PROXY_TRUSTED_HOPS to the number of proxies" in completed.stderr
