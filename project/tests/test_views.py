"""The site's own pages: the admin's name, the landing page "View site" leads
to, and the favicon."""

import pytest
from django.urls import reverse

from documents.access import COMMAND_LINE
from documents.services.channels import create_channel

pytestmark = pytest.mark.django_db


def test_the_admin_is_branded_quire_and_view_site_leads_home(admin_client):
    """The admin's header and title say Quire (not "Django administration"), and
    its "View site" link opens the landing page."""
    index = admin_client.get(reverse("admin:index"))
    assert index.status_code == 200
    assert "Django administration" not in index.text
    assert "<title>Administration | Quire</title>" in index.text
    assert '<a href="/">View site</a>' in index.text
    assert admin_client.get("/").status_code == 200


def test_the_landing_page_says_what_quire_is_and_where_to_go(client):
    """Anyone sees what Quire is, the way into the admin and how agents connect;
    no channel is named to a visitor who isn't signed in."""
    channel = create_channel(slug="secret-plans", name="Secret plans")
    response = client.get("/")
    assert response.status_code == 200
    assert "MCP server" in response.text
    assert 'href="/admin/"' in response.text
    assert "/mcp/&lt;channel-slug&gt;" in response.text
    assert channel.name not in response.text and channel.slug not in response.text


def test_the_landing_page_lists_the_mcp_urls_of_a_curators_channels(
    client, django_user_model
):
    """A signed-in curator sees the MCP URL of each channel they curate, and
    only those."""
    mine = create_channel(slug="handbook", name="Handbook", actor=COMMAND_LINE)
    create_channel(slug="payroll", name="Payroll")
    curator = django_user_model.objects.create_user(
        "curator", password="pw-123456", is_staff=True
    )
    mine.curators.add(curator)
    client.force_login(curator)
    response = client.get("/")
    assert "http://testserver/mcp/handbook" in response.text
    assert "Payroll" not in response.text


def test_the_favicon_is_served(client):
    """/favicon.ico answers with an icon (browsers ask for it on every page that
    names none, so a 404 would be logged each time)."""
    response = client.get("/favicon.ico")
    assert response.status_code == 200
    assert response["Content-Type"] == "image/x-icon"
    assert b"".join(response.streaming_content)[:4] == b"\x00\x00\x01\x00"
    admin_login = client.get(reverse("admin:login"))
    assert 'rel="icon" href="/static/quire/favicon.svg"' in admin_login.text
