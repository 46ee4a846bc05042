"""What an API key looks like: its prefix and how it is stored (a digest).

Below admission and the key services, which both need it."""

import hashlib

KEY_PREFIX = "qk_"


def digest_key(raw_key: str) -> str:
    """The stored form of a key: its SHA-256, looked up by index."""
    return hashlib.sha256(raw_key.encode("utf-8")).hexdigest()
