"""What an abandoned sign-in leaves: no active grant, and a code and a client
registration that the housekeeping deletes once they expire."""

import datetime
import io
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import get_application_model, get_grant_model

from documents.management.commands.ingest_worker import Command as IngestWorker
from documents.models import SignInGrant
from documents.services.grants import clear_sign_in_leftovers
from signin.tests.test_flow import BASE, authorize, register, sign_in_and_get_tokens

pytestmark = pytest.mark.django_db


def consent_without_exchange(client: Client, app: dict) -> str:
    """Approve the consent page and stop there, like a client that never came
    back for its token: the code it was sent."""
    page, _ = authorize(client, app["client_id"], resource=f"{BASE}/mcp/demo")
    form = page.context["form"]
    data = {name: form[name].value() or "" for name in form.fields}
    answer = client.post("/oauth/authorize/", {**data, "allow": "Allow"})
    assert answer.status_code == 302, answer.content
    return parse_qs(urlsplit(answer["Location"]).query)["code"][0]


def test_an_abandoned_sign_in_leaves_no_active_grant_and_is_cleared(reader, settings):
    """A consent whose code is never exchanged records no grant; once the code
    has expired and the registration has gone unused past
    OAUTH_REGISTRATION_UNUSED_MINUTES, the code and its one-off client are gone."""
    settings.OAUTH_REGISTRATION_UNUSED_MINUTES = 30
    browser = Client()
    browser.force_login(reader)
    app = register(Client(), client_name="My agent")
    consent_without_exchange(browser, app)
    application = get_application_model().objects.get(client_id=app["client_id"])
    assert not SignInGrant.objects.filter(revoked_at__isnull=True).exists()
    assert get_grant_model().objects.filter(application=application).count() == 1

    now = timezone.now()
    soon = clear_sign_in_leftovers(now=now)
    assert (soon.codes, soon.clients) == (0, 0)  # the code lives a minute
    after_code = clear_sign_in_leftovers(now=now + datetime.timedelta(minutes=2))
    assert (after_code.codes, after_code.clients) == (1, 0)
    assert get_application_model().objects.filter(pk=application.pk).exists()

    later = clear_sign_in_leftovers(now=now + datetime.timedelta(minutes=31))
    assert (later.codes, later.clients) == (0, 1)
    assert not get_application_model().objects.filter(pk=application.pk).exists()
    assert not get_grant_model().objects.exists()


def test_a_grant_becomes_active_with_its_first_token(reader):
    """The token exchange records the grant, with the channel and scopes the
    person approved; a client that signed someone in is never cleared."""
    browser = Client()
    browser.force_login(reader)
    app = register(Client())
    sign_in_and_get_tokens(browser, app)
    grant = SignInGrant.objects.get(revoked_at__isnull=True)
    assert (grant.user, grant.channel.slug, grant.scopes) == (reader, "demo", ["read"])
    assert grant.resource == f"{BASE}/mcp/demo"

    far = timezone.now() + datetime.timedelta(days=365)
    assert clear_sign_in_leftovers(now=far).clients == 0
    assert get_application_model().objects.filter(client_id=app["client_id"]).exists()


def test_clients_made_in_the_admin_are_never_cleared(reader):
    """Only registrations (RFC 7591) expire; a client an operator created stays
    however long it goes unused."""
    made = get_application_model().objects.create(
        name="Operator's client",
        client_type="public",
        authorization_grant_type="authorization-code",
        redirect_uris="http://127.0.0.1:9000/callback",
    )
    far = timezone.now() + datetime.timedelta(days=365)
    assert clear_sign_in_leftovers(now=far).clients == 0
    assert get_application_model().objects.filter(pk=made.pk).exists()


def test_the_workers_periodic_check_clears_leftovers(reader):
    """The worker's periodic checks (ingest_worker) run the clearing: a
    registration older than the limit with nothing to show for it goes."""
    app = register(Client())
    old = timezone.now() - datetime.timedelta(days=1)
    get_application_model().objects.filter(client_id=app["client_id"]).update(
        created=old
    )
    out = io.StringIO()
    command = IngestWorker(stdout=out)
    command._recover()
    assert (
        not get_application_model().objects.filter(client_id=app["client_id"]).exists()
    )
    assert "Removed unused sign-in clients: 1" in out.getvalue()
