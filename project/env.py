"""Typed readers for settings taken from the environment.

Each reader fails fast with ImproperlyConfigured naming the variable and the value,
so a typo in deployment stops start-up instead of silently falling back.
"""

import ipaddress
import json
import os
from urllib.parse import urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use true or false).")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer.") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}.")
    return value


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number.") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}.")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_networks(name: str) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """Comma-separated addresses or networks (10.0.0.0/8, ::1); none by
    default."""
    networks = []
    for item in env_list(name, []):
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ImproperlyConfigured(
                f"{name}: {item!r} is not an IP address or network."
            ) from None
    return networks


def env_choice(name: str, default: str, choices: list[str]) -> str:
    value = os.environ.get(name) or default
    if value not in choices:
        raise ImproperlyConfigured(
            f"{name}={value!r} is not one of: {', '.join(choices)}."
        )
    return value


def _json_object(name: str, of: str) -> dict:
    """The JSON object in variable `name` ({} when unset); start-up stops on
    anything else, naming the variable."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} is not valid JSON ({exc}).") from None
    if not isinstance(value, dict):
        raise ImproperlyConfigured(f"{name} must be a JSON object of {of}.")
    return value


def env_chat_endpoints(name: str) -> dict[str, dict]:
    """The chat-model endpoints the operator declares, as JSON:
    {"<name>": {"base_url": "https://…/v1", "api_key_env": "VAR", "models": [...]}}.

    Channels pick one by name; nothing else can make the server call a URL or
    read an environment variable on a channel editor's behalf. `api_key_env` and
    `models` are optional (no key; any model name).
    """
    value = _json_object(name, "endpoints")
    endpoints = {}
    for key, spec in value.items():
        where = f"{name}[{key!r}]"
        if not isinstance(spec, dict) or set(spec) - {
            "base_url",
            "api_key_env",
            "models",
        }:
            raise ImproperlyConfigured(
                f"{where} must be an object with base_url, api_key_env, models."
            )
        base_url = spec.get("base_url")
        parts = urlsplit(base_url) if isinstance(base_url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
            raise ImproperlyConfigured(f"{where}.base_url must be an http(s) URL.")
        api_key_env = spec.get("api_key_env") or ""
        models = spec.get("models") or []
        if not isinstance(api_key_env, str) or not (
            isinstance(models, list) and all(isinstance(m, str) for m in models)
        ):
            raise ImproperlyConfigured(
                f"{where}: api_key_env is a variable name, models a list of names."
            )
        endpoints[key] = {
            "base_url": base_url.rstrip("/"),
            "api_key_env": api_key_env,
            "models": models,
        }
    return endpoints


def env_folders(name: str) -> list[str]:
    """Absolute folder paths joined by commas: the only places a folder source
    may read (a configured path must resolve under one of them)."""
    folders = env_list(name, [])
    for folder in folders:
        if not os.path.isabs(folder):
            raise ImproperlyConfigured(f"{name}: {folder!r} is not an absolute path.")
    return [os.path.realpath(folder) for folder in folders]


S3_STORE_FIELDS = {
    "endpoint_url",
    "region",
    "access_key_env",
    "secret_key_env",
    "session_token_env",
    "addressing_style",
    "buckets",
    "timeout",
}


def env_s3_stores(name: str) -> dict[str, dict]:
    """The S3-compatible stores the operator declares, as JSON:
    {"<name>": {"endpoint_url": "https://…", "region": "eu-west-1",
    "access_key_env": "VAR", "secret_key_env": "VAR"}}, optionally with
    "session_token_env", "addressing_style" (path|virtual|auto, default path),
    "buckets" (the only buckets allowed) and "timeout" (seconds, default 30).

    A source picks a store by name, so no form ever carries a key or an
    endpoint; the keys stay in the variables named here.
    """
    value = _json_object(name, "stores")
    stores = {}
    for key, spec in value.items():
        where = f"{name}[{key!r}]"
        if not isinstance(spec, dict) or set(spec) - S3_STORE_FIELDS:
            raise ImproperlyConfigured(
                f"{where} must be an object with {', '.join(sorted(S3_STORE_FIELDS))}."
            )
        endpoint = spec.get("endpoint_url") or ""
        parts = urlsplit(endpoint) if isinstance(endpoint, str) else None
        if endpoint and (
            parts is None or parts.scheme not in ("http", "https") or not parts.netloc
        ):
            raise ImproperlyConfigured(f"{where}.endpoint_url must be an http(s) URL.")
        names = [spec.get(f) or "" for f in ("access_key_env", "secret_key_env")]
        token_env = spec.get("session_token_env") or ""
        if not all(isinstance(n, str) and n for n in names) or not isinstance(
            token_env, str
        ):
            raise ImproperlyConfigured(
                f"{where}: access_key_env and secret_key_env name the variables "
                "holding the keys."
            )
        style = spec.get("addressing_style") or "path"
        buckets = spec.get("buckets") or []
        timeout = spec.get("timeout", 30)
        if style not in ("path", "virtual", "auto") or not (
            isinstance(buckets, list) and all(isinstance(b, str) for b in buckets)
        ):
            raise ImproperlyConfigured(
                f"{where}: addressing_style is path, virtual or auto; buckets a "
                "list of names."
            )
        if not isinstance(timeout, int | float) or timeout <= 0:
            raise ImproperlyConfigured(f"{where}.timeout is a number of seconds.")
        stores[key] = {
            "endpoint_url": endpoint,
            "region": spec.get("region") or "",
            "access_key_env": names[0],
            "secret_key_env": names[1],
            "session_token_env": token_env,
            "addressing_style": style,
            "buckets": buckets,
            "timeout": float(timeout),
        }
    return stores


def env_database_urls(name: str) -> list[dict]:
    """PostgreSQL URLs separated by commas or spaces (none by default), each
    parsed into a DATABASES entry."""
    entries = []
    for url in os.environ.get(name, "").replace(",", " ").split():
        try:
            entry = dj_database_url.parse(url)
        except ValueError as exc:
            raise ImproperlyConfigured(f"{name}: a URL is not valid: {exc}") from None
        if entry["ENGINE"] != "django.db.backends.postgresql":
            raise ImproperlyConfigured(f"{name}: every URL must point at PostgreSQL.")
        entries.append(entry)
    return entries
