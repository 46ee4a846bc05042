"""Client ID Metadata Documents: a client named by the URL of its metadata is
shown on the consent page under its own name, and can sign in; the default
fetcher refuses URLs that aren't public https ones (no server-side request to
internal hosts)."""

import pytest
from django.contrib.auth.models import User
from oauth2_provider.cimd import CIMDError, SafeMetadataFetcher

from signin.tests.test_flow import BASE, REDIRECT, authorize

pytestmark = pytest.mark.django_db
CLIENT_URL = "https://client.example/quire-client.json"


class DocumentFetcher:
    """Stands in for the network: serves the one metadata document."""

    documents = {
        CLIENT_URL: {
            "client_id": CLIENT_URL,
            "client_name": "Example Desktop",
            "client_uri": "https://client.example",
            "redirect_uris": [REDIRECT],
            "grant_types": ["authorization_code"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }
    }

    def fetch(self, client_id):
        if client_id not in self.documents:
            raise CIMDError("not found")
        return self.documents[client_id], 300


def test_a_client_named_by_its_metadata_url_signs_in(client, make_channel, fetcher):
    channel = make_channel("demo", name="Demo")
    user = User.objects.create_user("rita", password="pw")
    channel.readers.add(user)
    client.force_login(user)
    page, _ = authorize(client, CLIENT_URL, resource=f"{BASE}/mcp/demo")
    assert page.status_code == 200, page.content
    assert b"Example Desktop" in page.content
    assert b"Identified by https://client.example/quire-client.json" in page.content


@pytest.mark.parametrize(
    "client_id",
    [
        "http://client.example/c.json",  # not https
        "https://127.0.0.1/c.json",  # loopback
        "https://10.0.0.5/c.json",  # private network
        "https://169.254.169.254/latest/meta-data",  # cloud metadata service
        "https://localhost/c.json",
    ],
)
def test_the_fetcher_never_calls_internal_addresses(client_id):
    with pytest.raises(CIMDError):
        SafeMetadataFetcher().fetch(client_id)
