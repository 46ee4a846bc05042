"""The audit trail in sentences (documents.access.sentences) and, in the
admin, a run of identical events on one row with its count."""

import re

import pytest
from django.core.files.base import ContentFile
from django.urls import reverse
from oauth2_provider.models import get_application_model

from documents.access import COMMAND_LINE, Actor, audit
from documents.access.sentences import sentence
from documents.models import AuditEvent
from documents.services.documents import create_document
from documents.services.grants import record_sign_in_grant
from documents.services.keys import create_api_key
from documents.tests.test_admin import channel_form_data

pytestmark = pytest.mark.django_db


def text(event: AuditEvent) -> str:
    return re.sub(r"</?em>", "*", str(sentence(event)))


@pytest.fixture
def ana(django_user_model):
    return django_user_model.objects.create_user("ana", first_name="Ana", is_staff=True)


def test_a_staff_upload_reads_as_a_sentence(make_channel, ana):
    """ "Ana (staff) uploaded *Manual rev 3* to *Aviation*": the person's name,
    the document's title and the channel's name, not its id or slug."""
    channel = make_channel("aviation", "Aviation")
    create_document(
        channel=channel,
        file=ContentFile(b"# Manual rev 3\n\nText.", name="manual.md"),
        title="Manual rev 3",
        actor=Actor(via="admin", user=ana),
        enqueue=False,
    )
    event = AuditEvent.objects.get(action=AuditEvent.Action.DOCUMENT_UPLOAD)
    assert text(event) == "Ana (staff) uploaded *Manual rev 3* to *Aviation*"


def test_an_api_key_names_itself_and_the_door(make_channel):
    """ "API key *ci-bot* (qk_ab12…) ... over MCP"."""
    channel = make_channel("aviation", "Aviation")
    new = create_api_key(
        actor=COMMAND_LINE, name="ci-bot", channels=[channel], scopes=["read", "write"]
    )
    audit.record(
        audit.Action.DOCUMENT_DELETE,
        actor=Actor(via="mcp", api_key=new.api_key),
        channel=channel,
        detail="",
    )
    event = AuditEvent.objects.get(action=AuditEvent.Action.DOCUMENT_DELETE)
    prefix = new.api_key.prefix
    assert text(event) == (
        f"API key *ci-bot* ({prefix}…) deleted *something* from *Aviation* over MCP"
    )


def test_a_sign_in_reads_as_the_client_signing_in_for_a_person(make_channel, ana):
    """ "Claude (OAuth client) signed in as ana, read access to *Aviation*"."""
    channel = make_channel("aviation", "Aviation")
    application = get_application_model().objects.create(
        name="Claude",
        client_type="public",
        authorization_grant_type="authorization-code",
        redirect_uris="http://127.0.0.1/callback",
    )
    record_sign_in_grant(
        user=ana,
        application=application,
        channel=channel,
        resource="http://testserver/mcp/aviation",
        scopes=["read"],
    )
    event = AuditEvent.objects.get(action=AuditEvent.Action.GRANT_CREATE)
    assert text(event) == (
        "Claude (OAuth client) signed in as ana, read access to *Aviation*"
    )


def test_creating_a_channel_reads_as_creation(make_channel):
    """A new channel is told as created, by the command line here."""
    make_channel("aviation", "Aviation")
    event = AuditEvent.objects.get()
    assert event.action == AuditEvent.Action.CHANNEL_CREATE
    assert text(event) == "Command line created the channel *Aviation*"


def test_creating_a_channel_in_the_admin_is_logged_as_creation(admin_client):
    """The admin's channel form records channel.create, never a change."""
    admin_client.post(
        reverse("admin:documents_channel_add"),
        channel_form_data(name="Aviation", slug="aviation"),
    )
    assert list(AuditEvent.objects.values_list("action", flat=True)) == [
        AuditEvent.Action.CHANNEL_CREATE
    ]


def test_the_channel_is_named_by_its_current_name_or_the_slug_it_had(make_channel):
    """Renamed, the sentence follows; deleted, it keeps the slug."""
    channel = make_channel("aviation", "Aviation")
    channel.name = "Aviation manuals"
    channel.save()
    event = AuditEvent.objects.get()
    assert "*Aviation manuals*" in text(event)
    channel.delete()
    event.refresh_from_db()
    assert "*aviation*" in text(event)


def test_values_are_escaped(make_channel):
    """A hostile title stays text."""
    channel = make_channel("aviation", "<b>Aviation</b>")
    assert "&lt;b&gt;Aviation&lt;/b&gt;" in str(sentence(AuditEvent.objects.get()))
    assert channel.pk


def test_repeated_identical_events_are_one_row_with_a_count(admin_client, make_channel):
    """Three identical events on one day are one row saying ×3; a different
    one stays its own row."""
    channel = make_channel("aviation", "Aviation")
    actor = Actor(via="rest")
    for _ in range(3):
        audit.record(audit.Action.AUTH_REFUSED, actor=actor, channel=channel)
    grouped = AuditEvent.objects.with_repeats()
    assert sorted(event.repeats for event in grouped) == [1, 3]
    listing = admin_client.get(reverse("admin:documents_auditevent_changelist"))
    assert listing.status_code == 200
    assert "<h1>Audit trail</h1>" in listing.text
    assert listing.text.count("was refused access to") == 1
    assert "×3" in listing.text
    by_year = admin_client.get(
        reverse("admin:documents_auditevent_changelist") + "?action=auth.refused"
    )
    assert by_year.status_code == 200 and "×3" in by_year.text
