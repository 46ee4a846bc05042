"""Limits on the shape of what clients send, checked before any work starts.

JSON nested deeper than JSON_MAX_DEPTH, and queries longer than
QUERY_MAX_CHARS, are refused with a message a person (or a model) can act on.
"""

import json
from typing import Any

from django.conf import settings

# Largest id and page number a client may name (PostgreSQL's bigint and integer).
MAX_ID = 2**63 - 1
MAX_PAGE = 2**31 - 1
# Largest offset into a listing.
MAX_OFFSET = 10**9


class TooComplex(ValueError):
    """Input refused for its shape (nesting, length); the message says why."""


def json_depth(value: Any) -> int:
    """How deeply lists and objects nest in `value` (a scalar is 0), iteratively."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def check_depth(value: Any, *, what: str = "The JSON") -> Any:
    limit = settings.JSON_MAX_DEPTH
    if json_depth(value) > limit:
        raise TooComplex(f"{what} nests deeper than {limit} levels.")
    return value


def parse_json(data: bytes | str, *, what: str = "The JSON") -> Any:
    """json.loads with the nesting limit; ValueError (TooComplex for the shape)
    for anything that isn't acceptable JSON."""
    try:
        value = json.loads(data)
    except RecursionError:
        raise TooComplex(
            f"{what} nests deeper than {settings.JSON_MAX_DEPTH} levels."
        ) from None
    return check_depth(value, what=what)


def check_query(query: str) -> str:
    limit = settings.QUERY_MAX_CHARS
    if len(query) > limit:
        raise TooComplex(
            f"The query has {len(query)} characters; the limit is {limit}. Ask "
            "one shorter question."
        )
    return query
