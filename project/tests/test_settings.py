"""Deployment settings come from the environment; bad or missing ones stop start-up."""

import json
import os
import subprocess
import sys

from axes.middleware import AxesMiddleware
from django.conf import settings
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.csrf import CsrfViewMiddleware
from django.middleware.security import SecurityMiddleware
from django.utils.module_loading import import_string

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


def without_secret_key() -> dict[str, str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "project.settings"}
    env.pop("DJANGO_SECRET_KEY", None)
    return env


def start(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        env=env,
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_debug_off_without_a_secret_key_refuses_to_start(tmp_path):
    """A deployment that forgot DJANGO_SECRET_KEY stops with a message saying what
    to set, instead of signing links with a key made up on one machine."""
    env = {**without_secret_key(), "DJANGO_DEBUG": "false"}
    env["QUIRE_DATA_DIR"] = str(tmp_path)
    completed = start(env)
    assert completed.returncode != 0
    assert "ImproperlyConfigured" in completed.stderr
    assert "DJANGO_SECRET_KEY is not set, and DJANGO_DEBUG is off" in completed.stderr
    assert not (tmp_path / "secret_key").exists()


def test_debug_on_without_a_secret_key_keeps_a_development_key(tmp_path):
    """Development needs no key: one is made once in the data folder and reused."""
    env = {**without_secret_key(), "DJANGO_DEBUG": "true"}
    env["QUIRE_DATA_DIR"] = str(tmp_path)
    first = start(env)
    assert first.returncode == 0, first.stderr
    key = (tmp_path / "secret_key").read_text()
    assert len(key) >= 50
    assert start(env).returncode == 0
    assert (tmp_path / "secret_key").read_text() == key


def test_a_secret_key_from_the_environment_starts_with_debug_off(tmp_path):
    env = {
        **without_secret_key(),
        "DJANGO_DEBUG": "false",
        "DJANGO_SECRET_KEY": "k" * 50,
        "QUIRE_DATA_DIR": str(tmp_path),
    }
    completed = start(env)
    assert completed.returncode == 0, completed.stderr
    assert not (tmp_path / "secret_key").exists()


def test_the_middleware_the_silenced_checks_look_for_is_installed_by_another_name():
    """security.W001-W003 and axes.W002 are silenced because their middleware is
    installed as project.middleware subclasses; this holds that it still is."""
    installed = [import_string(path) for path in settings.MIDDLEWARE]
    for wanted in (
        SecurityMiddleware,
        XFrameOptionsMiddleware,
        CsrfViewMiddleware,
        AxesMiddleware,
    ):
        assert any(issubclass(cls, wanted) for cls in installed), wanted


def test_forwarded_proto_and_host_need_a_declared_proxy():
    """Trusting X-Forwarded-Proto or -Host with PROXY_TRUSTED_HOPS=0 (no proxy
    in front, so any client could set them) stops start-up, naming the fix."""
    for variable in ("DJANGO_BEHIND_TLS_PROXY", "DJANGO_USE_X_FORWARDED_HOST"):
        completed = read_settings(**{variable: "true", "PROXY_TRUSTED_HOPS": "0"})
        assert completed.returncode != 0
        assert "set PROXY_TRUSTED_HOPS to the number of proxies" in completed.stderr
