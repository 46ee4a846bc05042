"""Quire's admin site: only the lists a curator or an operator works with,
titles and messages in plain words, and locked-out sign-ins an operator can
unlock."""

import pytest
from axes.models import AccessAttempt
from django.contrib import admin
from django.contrib.auth.models import User
from django.test import Client
from django.urls import NoReverseMatch, reverse

from documents.access import COMMAND_LINE
from documents.services.channels import create_channel

pytestmark = pytest.mark.django_db

SHOWN = {
    "auth.Group",
    "auth.User",
    "axes.AccessAttempt",
    "documents.ApiKey",
    "documents.AuditEvent",
    "documents.Channel",
    "documents.Document",
    "documents.Feedback",
    "documents.SignInGrant",
    "documents.Source",
    "documents.SourceSync",
}


def test_the_site_registers_only_what_curators_and_operators_use():
    """No django-oauth-toolkit list (tokens, applications, grants), no task
    rows and none of axes' logs: Quire's lists, users and groups, lockouts."""
    assert {model._meta.label for model in admin.site._registry} == SHOWN


def test_the_index_shows_no_framework_section(admin_client):
    """The index names Quire's lists and "Locked-out sign-ins", never a
    framework app or its internals."""
    index = admin_client.get(reverse("admin:index")).text
    for hidden in [
        "Django OAuth Toolkit",
        "Access tokens",
        "Refresh tokens",
        "Id tokens",
        "Applications",
        "Tasks database",
        "Access attempts",
        "Access logs",
        "Axes",
    ]:
        assert hidden not in index
    assert "Locked-out sign-ins" in index
    assert "Sign-in grants" in index
    with pytest.raises(NoReverseMatch):
        reverse("admin:oauth2_provider_accesstoken_changelist")


def test_titles_are_plain_words(admin_client):
    """A list is titled by what it lists, a row by its kind and name."""
    channel = create_channel(slug="aviation", name="Aviation", actor=COMMAND_LINE)
    listing = admin_client.get(reverse("admin:documents_channel_changelist")).text
    assert "<h1>Channels</h1>" in listing
    assert "Select channel to change" not in listing
    page = admin_client.get(
        reverse("admin:documents_channel_change", args=[channel.pk])
    ).text
    assert "<h1>Channel: Aviation</h1>" in page
    assert "Change channel" not in page
    users = admin_client.get(reverse("admin:auth_user_changelist")).text
    assert "<h1>Users</h1>" in users
    new = admin_client.get(reverse("admin:documents_channel_add")).text
    assert "<h1>New channel</h1>" in new


def test_the_inline_button_reads_as_a_sentence(admin_client):
    """ "Add another metadata field", not "Add another Metadata field"."""
    page = admin_client.get(reverse("admin:documents_channel_add")).text
    assert "Add another metadata field" in page
    assert "Add another Metadata field" not in page


def test_an_operator_unlocks_a_locked_out_sign_in(db, settings, admin_client):
    """After AXES_FAILURE_LIMIT wrong passwords the pair is listed as locked
    out; the unlock action lets the right password in again at once."""
    User.objects.create_user("ana", password="right-password", is_staff=True)
    client = Client(REMOTE_ADDR="10.9.9.9")
    for _ in range(settings.AXES_FAILURE_LIMIT):
        client.post("/admin/login/", {"username": "ana", "password": "wrong"})
    url = reverse("admin:axes_accessattempt_changelist")
    listing = admin_client.get(url).text
    assert "<h1>Locked-out sign-ins</h1>" in listing
    assert "locked out" in listing and "10.9.9.9" in listing
    attempt = AccessAttempt.objects.get(username="ana")
    response = admin_client.post(
        url,
        {"action": "unlock_selected", "_selected_action": [attempt.pk]},
        follow=True,
    )
    assert "Unlocked 1 sign-in: it may try again now." in response.text
    client.post("/admin/login/", {"username": "ana", "password": "right-password"})
    assert "_auth_user_id" in client.session


def test_a_curator_who_is_not_superuser_sees_no_lockouts(client, django_user_model):
    """Lockouts are an operator's page: staff without the permission are refused."""
    curator = django_user_model.objects.create_user("cur", is_staff=True)
    client.force_login(curator)
    url = reverse("admin:axes_accessattempt_changelist")
    assert client.get(url).status_code == 403
