"""Django's I/O-free middleware, with their hooks run inline in async requests.

In an async request Django runs each MiddlewareMixin hook through sync_to_async:
one thread hop per hook, which made up the largest part of a small MCP call. The
hooks of the middleware below only read settings and headers and set headers or
lazy attributes (no database, no files), so these subclasses call them inline.
Session, CSRF and message middleware keep Django's hops: their hooks may touch
the database.
"""

from django.contrib.auth import middleware as auth
from django.middleware import clickjacking, common, csp, security


class InlineHooks:
    """Runs process_request/process_response in the event loop's thread."""

    async def __acall__(self, request):
        response = None
        if hasattr(self, "process_request"):
            response = self.process_request(request)
        response = response or await self.get_response(request)
        if hasattr(self, "process_response"):
            response = self.process_response(request, response)
        return response


class SecurityMiddleware(InlineHooks, security.SecurityMiddleware):
    pass


class CommonMiddleware(InlineHooks, common.CommonMiddleware):
    pass


class AuthenticationMiddleware(InlineHooks, auth.AuthenticationMiddleware):
    pass


class XFrameOptionsMiddleware(InlineHooks, clickjacking.XFrameOptionsMiddleware):
    pass


class ContentSecurityPolicyMiddleware(InlineHooks, csp.ContentSecurityPolicyMiddleware):
    pass
