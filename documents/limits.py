"""Limits on what clients send, defined once for every door: the MCP tools'
arguments, the REST schemas and the forms all take them from here.

JSON nested deeper than JSON_MAX_DEPTH, and queries longer than
QUERY_MAX_CHARS, are refused with a message a person (or a model) can act on.
Lengths of what is stored in a column come from the model field's
`max_length` (`max_length()`, `clip()`), never from a copy of the number.
"""

import json
from typing import Annotated, Any

from django.conf import settings
from django.db.models import Model
from pydantic import AfterValidator, Field

# Largest id and page number a client may name (PostgreSQL's bigint and integer).
MAX_ID = 2**63 - 1
MAX_PAGE = 2**31 - 1
# Largest offset into a listing.
MAX_OFFSET = 10**9
# Most document ids one request names (search, answers, citation links, the
# metadata resource): each is looked up, so the list is bounded.
MAX_DOCUMENT_IDS = 100
# Documents a listing returns when the client doesn't say (capped by
# MCP_LIST_LIMIT_MAX).
LIST_LIMIT_DEFAULT = 25
# The longest listing cursor accepted back (it carries the listing's filter).
CURSOR_MAX_CHARS = 16_000
# A rating of an answer: the scale, and how much of the question, the answer
# and the remark is kept.
SCORE_MIN, SCORE_MAX = 1, 5
FEEDBACK_QUERY_MAX_CHARS = 20_000
FEEDBACK_ANSWER_MAX_CHARS = 50_000
FEEDBACK_COMMENT_MAX_CHARS = 5_000


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


class _QueryMaxLength:
    """Puts QUERY_MAX_CHARS into a query's JSON schema when the schema is built,
    not at import (settings are read per schema; tests change them)."""

    def __get_pydantic_json_schema__(self, core_schema, handler) -> dict:
        schema = handler(core_schema)
        schema["maxLength"] = settings.QUERY_MAX_CHARS
        return schema


def max_length(model: type[Model], field: str) -> int:
    """The column's own limit: forms and schemas take it from the model."""
    return model._meta.get_field(field).max_length


def clip(text: str, model: type[Model], field: str) -> str:
    """`text` cut to what `model.field` holds (a title made from a heading)."""
    return text[: max_length(model, field)]


# The argument types both doors declare.
DocumentId = Annotated[int, Field(ge=1, le=MAX_ID)]
DocumentIds = Annotated[
    list[DocumentId], Field(min_length=1, max_length=MAX_DOCUMENT_IDS)
]
Query = Annotated[
    str, Field(min_length=1), AfterValidator(check_query), _QueryMaxLength()
]
Score = Annotated[
    int,
    Field(
        ge=SCORE_MIN,
        le=SCORE_MAX,
        description=f"{SCORE_MIN} (useless) to {SCORE_MAX} (excellent).",
    ),
]
FeedbackQuery = Annotated[str, Field(min_length=1, max_length=FEEDBACK_QUERY_MAX_CHARS)]
FeedbackAnswer = Annotated[
    str, Field(min_length=1, max_length=FEEDBACK_ANSWER_MAX_CHARS)
]
FeedbackComment = Annotated[str, Field(max_length=FEEDBACK_COMMENT_MAX_CHARS)]
