"""Every route that accepts a body has a before-body rule (issue 19, finding 3).

The URL configuration is walked (ninja's routes included, as Django sees them):
each route that answers POST, PUT or PATCH with anything but 405 must have a
rule of its own in project.prechecks (not the small cap meant for routes that
take no body), and a 200 MB body sent to any route, with any of those methods
and no credentials, is answered before one byte of it is read.
"""

import re
from collections.abc import Iterator

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, resolve
from django.urls.resolvers import RegexPattern

from project import prechecks
from project.tests.test_prechecks import Upload, run_application

pytestmark = pytest.mark.django_db(transaction=True)
BODY_METHODS = ("POST", "PUT", "PATCH")
# A value each path converter accepts; ninja's `{x}` is Django's str converter.
SAMPLES = {"int": "1", "slug": "demo", "str": "demo", "path": "1"}
# ninja's own pages answer every method alike and never read a body: the small
# cap of routes that take none is their rule.
IGNORE_BODIES = {"api:openapi-json", "api:openapi-view", "api:api-root"}
# The admin's two regular-expression routes, by what they match.
REGEX_SAMPLES = {
    r"(?P<app_label>": "auth/",
    r"(?P<url>.*)$": "nope/",
}


def routes(
    resolver: URLResolver | None = None, prefix: str = "", raw: str = ""
) -> Iterator[tuple[str, str, URLPattern]]:
    """(route with samples for regular expressions, route as Django states
    it, pattern) of every URL pattern, includes followed."""
    resolver = resolver or get_resolver()
    for pattern in resolver.url_patterns:
        piece, text = _piece(pattern.pattern), str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from routes(pattern, prefix + piece, raw + text)
        else:
            yield prefix + piece, raw + text, pattern


def _piece(pattern) -> str:
    if isinstance(pattern, RegexPattern):
        regex = pattern.regex.pattern
        for start, sample in REGEX_SAMPLES.items():
            if regex.lstrip("^").startswith(start):
                return sample
        return regex.lstrip("^").rstrip("$")
    return str(pattern)


def sample_path(route: str) -> str:
    return "/" + re.sub(r"<(?:(\w+):)?\w+>", lambda m: SAMPLES[m[1] or "str"], route)


def all_routes() -> list[tuple[str, str]]:
    """(route, sample path) of every route (ninja states a route once per
    operation: once here), each path resolving to its own route."""
    found = {}
    for route, raw, pattern in routes():
        path = sample_path(route)
        match = resolve(path)
        assert match.route == raw or isinstance(pattern.pattern, RegexPattern), path
        found.setdefault(path, raw)
    return [(raw, path) for path, raw in found.items()]


def test_the_walk_finds_every_kind_of_route():
    """The walk reaches the admin, ninja's REST routes, MCP and sign-in."""
    paths = {path for _, path in all_routes()}
    assert {
        "/admin/documents/document/upload/",
        "/api/channels/demo/documents",
        "/mcp/demo",
        "/oauth/token/",
        "/signin/login/",
        "/playground/demo/",
    } <= paths


def test_every_route_that_accepts_a_body_has_a_rule_of_its_own(django_user_model):
    """Each route that does not answer 405 to a small POST, PUT or PATCH is
    covered by a before-body rule meant for bodies (MCP, REST, staff, sign-in),
    never by the small cap of routes that take none."""
    client = Client()
    uncovered, covered = [], set()
    for route, path in all_routes():
        match = resolve(path)
        rule = prechecks.rule_for(match)
        if match.view_name in IGNORE_BODIES:
            continue
        for method in BODY_METHODS:
            response = client.generic(
                method, path, b"{}", content_type="application/json"
            )
            if response.status_code == 405:
                continue
            if rule.takes_body:
                covered.add(rule.name)
            else:
                uncovered.append((method, route, rule.name, response.status_code))
    assert uncovered == [], "\n".join(map(str, uncovered))
    assert covered == {"mcp", "rest", "staff", "sign-in"}


def test_a_route_that_names_no_rule_falls_under_the_small_cap():
    """Default deny: routes without a body rule, and paths matching no route,
    take at most SMALL_BODY_BYTES."""
    for path in ("/", "/citations/x", "/api/channels", "/api/nope", "/nope"):
        match = prechecks.route_match(path)
        assert not prechecks.rule_for(match).takes_body, path
        assert prechecks.rule_for(match).limit() == prechecks.SMALL_BODY_BYTES


@pytest.mark.slow
def test_a_huge_body_on_any_route_is_answered_before_it_is_read():
    """200 MB declared with POST, PUT or PATCH and no credentials, to every
    route: a 4xx, and not one body byte read."""
    read = []
    for route, path in all_routes():
        for method in BODY_METHODS:
            upload = Upload(path, {"Content-Type": "application/json"})
            scope = upload.scope()
            scope["method"] = method
            status, _, _ = run_application(upload, scope)
            if not (400 <= status < 500 and upload.body_read == 0):
                read.append((method, route, status, upload.body_read))
    assert read == []
