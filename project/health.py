"""Endpoints for load balancers, orchestrators and Prometheus.

/healthz: the process answers (no database). /readyz: ready for traffic
(documents.telemetry.readiness), 503 otherwise; neither tells configuration.
/metrics: the Prometheus exposition (documents.telemetry.metrics), only to the
addresses METRICS_ALLOWED_ADDRESSES declares or a request bearing
METRICS_TOKEN; to anyone else, and when neither is set, it does not exist
(404).
"""

import hmac
import ipaddress

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from documents.access import client_address
from documents.telemetry import metrics, readiness


@require_safe
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


@require_safe
@never_cache
def readyz(request: HttpRequest) -> JsonResponse:
    checks = readiness.run_checks()
    ready = readiness.is_ready(checks)
    return JsonResponse(
        {"status": "ready" if ready else "not ready", "checks": checks},
        status=200 if ready else 503,
    )


@require_safe
@never_cache
def metrics_view(request: HttpRequest) -> HttpResponse:
    if not may_read_metrics(request):
        raise Http404
    body, content_type = metrics.render()
    return HttpResponse(body, content_type=content_type)


def may_read_metrics(request: HttpRequest) -> bool:
    token = settings.METRICS_TOKEN
    if token:
        scheme, _, presented = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(
            presented.strip().encode(), token.encode()
        ):
            return True
    try:
        address = ipaddress.ip_address(client_address(request))
    except ValueError:
        return False
    return any(address in network for network in settings.METRICS_ALLOWED_ADDRESSES)
