"""project.middleware: the CSP middleware's kept policies give the headers
Django's own middleware gives."""

from django.http import HttpResponse
from django.middleware import csp as django_csp
from django.test import RequestFactory
from django.utils.csp import CSP

from project.middleware import ContentSecurityPolicyMiddleware


def both(request_hook=None, response_hook=None) -> list[tuple[dict, dict]]:
    """The CSP headers of three answers in a row from Quire's middleware and
    from Django's, each given the same request and response."""

    def headers(middleware_class) -> list[dict]:
        middleware = middleware_class(lambda request: HttpResponse())
        answers = []
        for _ in range(3):
            request = RequestFactory().post("/mcp/handbook")
            middleware.process_request(request)
            if request_hook:
                request_hook(request)
            response = HttpResponse()
            if response_hook:
                response_hook(response)
            response = middleware.process_response(request, response)
            answers.append(
                {
                    name: value
                    for name, value in response.items()
                    if "Content-Security-Policy" in name
                }
            )
        return answers

    return list(
        zip(
            headers(ContentSecurityPolicyMiddleware),
            headers(django_csp.ContentSecurityPolicyMiddleware),
            strict=True,
        )
    )


def test_the_policy_without_a_nonce_is_djangos(settings):
    """No nonce used: the header Django writes, built from the setting."""
    settings.SECURE_CSP_REPORT_ONLY = {"default-src": [CSP.SELF]}
    for quire, django in both():
        assert quire == django
        assert quire["Content-Security-Policy"]
        assert quire["Content-Security-Policy-Report-Only"] == "default-src 'self'"


def test_a_setting_changed_changes_the_policy(settings):
    """A new configuration is a new policy, not the one kept."""
    before = both()[0][0]
    settings.SECURE_CSP = {"default-src": [CSP.NONE]}
    after = both()
    assert after[0][0] != before
    assert all(quire == django for quire, django in after)
    settings.SECURE_CSP = {}
    assert all(quire == django == {} for quire, django in both())


def test_a_used_nonce_and_a_views_own_policy_are_kept(settings):
    """A nonce a page used is in its own policy; a view's configuration is
    used, and a header it set is not overwritten."""
    settings.SECURE_CSP = {"script-src": [CSP.SELF, CSP.NONCE]}
    nonces = both(request_hook=lambda request: str(request._csp_nonce))
    for quire, django in nonces:
        assert "'nonce-" in quire["Content-Security-Policy"]
        assert "'nonce-" in django["Content-Security-Policy"]
    own = {"form-action": [CSP.SELF, "https://client.example"]}
    for quire, django in both(response_hook=lambda r: setattr(r, "_csp_config", own)):
        assert quire == django
        assert "https://client.example" in quire["Content-Security-Policy"]

    def preset(response):
        response["Content-Security-Policy"] = "sandbox"

    for quire, django in both(response_hook=preset):
        assert quire == django == {"Content-Security-Policy": "sandbox"}
