"""The one NinjaAPI of the project, mounted at /api/.

Every error leaves as RFC 9457 problem details (`application/problem+json`:
type, title, status, detail, and `errors` for invalid input), whichever layer
raised it: ninja's validation, the API key check, the services.
"""

import json
import logging
from http import HTTPStatus
from typing import Any

from django.core.exceptions import (
    BadRequest,
    PermissionDenied,
    SuspiciousOperation,
    ValidationError,
)
from django.http import Http404, HttpRequest, HttpResponse
from django.http.multipartparser import MultiPartParserError
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError
from ninja.errors import ValidationError as NinjaValidationError
from ninja.openapi.docs import Swagger

from documents.access import AccessDenied
from documents.api import ApiKeyHeader, BearerKey, router
from documents.api.auth import admit_request, required_scope
from documents.filters import FilterError
from documents.generation import GenerationError
from mcp_endpoint.auth import bearer_challenge

logger = logging.getLogger(__name__)

PROBLEM_CONTENT_TYPE = "application/problem+json"


def problem(
    status: int,
    detail: str,
    *,
    errors: list[dict] | None = None,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> HttpResponse:
    """A problem-details response; `title` is the status phrase (type about:blank)."""
    body: dict[str, Any] = {
        "type": "about:blank",
        "title": HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
    }
    if errors is not None:
        body["errors"] = errors
    body.update(extra)
    response = HttpResponse(
        json.dumps(body, ensure_ascii=False),
        status=status,
        content_type=PROBLEM_CONTENT_TYPE,
    )
    for name, value in (headers or {}).items():
        response[name] = value
    return response


class QuireAPI(NinjaAPI):
    """NinjaAPI whose OpenAPI document says error bodies are problem details."""

    def get_openapi_schema(self, *, path_prefix=None, path_params=None):
        schema = super().get_openapi_schema(
            path_prefix=path_prefix, path_params=path_params
        )
        for operations in schema.get("paths", {}).values():
            for operation in operations.values():
                for code, response in operation.get("responses", {}).items():
                    content = response.get("content", {})
                    if int(code) >= 400 and "application/json" in content:
                        content[PROBLEM_CONTENT_TYPE] = content.pop("application/json")
        return schema


api = QuireAPI(
    title="Quire API",
    version="1",
    description=(
        "Channels, documents, search, answers and feedback. Authenticate with an "
        "API key (`Authorization: Bearer <key>` or `api-key: <key>`); a key sees "
        "only the channels it opens. Errors are RFC 9457 problem details."
    ),
    auth=[BearerKey(), ApiKeyHeader()],
    urls_namespace="api",
    docs=Swagger(settings={"validatorUrl": None, "persistAuthorization": False}),
)
api.add_router("/", router)


def _location(loc: Any) -> list:
    return [part for part in loc] if isinstance(loc, (list, tuple)) else [loc]


@api.exception_handler(NinjaValidationError)
def invalid_input(request: HttpRequest, exc: NinjaValidationError) -> HttpResponse:
    errors = [
        {
            "loc": _location(error.get("loc", ())),
            "detail": str(error.get("msg", "Invalid value.")),
            "type": str(error.get("type", "invalid")),
        }
        for error in exc.errors
    ]
    return problem(422, "The request is not valid; see errors.", errors=errors)


@api.exception_handler(ValidationError)
def rejected_by_service(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    errors = [{"detail": message} for message in exc.messages]
    return problem(422, " ".join(exc.messages), errors=errors)


@api.exception_handler(FilterError)
def bad_filter(request: HttpRequest, exc: FilterError) -> HttpResponse:
    return problem(400, str(exc))


def access_denied_problem(exc: AccessDenied, request: HttpRequest) -> HttpResponse:
    """401 with a Bearer challenge pointing at the channel's protected-resource
    metadata, 403 naming a missing scope, 429 with Retry-After; used for
    refusals before the body is read too."""
    headers: dict[str, str] = {}
    extra: dict[str, Any] = {}
    slug, _ = required_scope(request.method, request.path)
    if exc.status == 401 or exc.missing_scope:
        headers["WWW-Authenticate"] = bearer_challenge(request, slug, exc)
    if exc.missing_scope:
        extra["missing_scope"] = exc.missing_scope
    if exc.retry_after is not None:
        headers["Retry-After"] = str(exc.retry_after)
    return problem(exc.status, str(exc), headers=headers, **extra)


@api.exception_handler(AccessDenied)
def key_rejected(request: HttpRequest, exc: AccessDenied) -> HttpResponse:
    return access_denied_problem(exc, request)


@api.exception_handler(AuthenticationError)
def not_authenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    """No key at all: refused (and recorded, and throttled) like a bad one."""
    slug, scope = required_scope(request.method, request.path)
    try:
        admit_request(request, slug, scope)
    except AccessDenied as denied:
        if denied.status == 401:
            denied = AccessDenied(
                "An API key is required (Authorization: Bearer <key> or "
                "api-key: <key>).",
                status=401,
                credentials_given=False,
            )
        return access_denied_problem(denied, request)
    return problem(401, "An API key is required.")


@api.exception_handler(HttpError)
def http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    return problem(exc.status_code, str(exc))


@api.exception_handler(Http404)
def not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return problem(404, str(exc) or "Not found.")


@api.exception_handler(PermissionDenied)
def forbidden(request: HttpRequest, exc: PermissionDenied) -> HttpResponse:
    return problem(403, str(exc) or "Forbidden.")


def unreadable_body(request: HttpRequest, exc: Exception) -> HttpResponse:
    """A body Django can't parse (a multipart without a valid boundary, too
    many fields): bad input, as Django itself answers it, not a 500."""
    return problem(400, f"The request body could not be read: {exc}"[:300])


for unreadable in (MultiPartParserError, BadRequest, SuspiciousOperation):
    api.add_exception_handler(unreadable, unreadable_body)


@api.exception_handler(GenerationError)
def generation_failed(request: HttpRequest, exc: GenerationError) -> HttpResponse:
    return problem(503, "The channel's answer model failed; try again later.")


@api.exception_handler(Exception)
def server_error(request: HttpRequest, exc: Exception) -> HttpResponse:
    logger.exception("API request %s %s failed", request.method, request.path)
    return problem(500, "The server failed to handle this request.")
