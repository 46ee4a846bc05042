"""The sign-in tests' channels and people."""

import pytest
from django.contrib.auth.models import User

from documents.tests.corpus import add_document


@pytest.fixture
def channels(make_channel, fake_embedder):
    demo = make_channel("demo", name="Demo")
    add_document(demo, title="Torque", pages=["Torque the nuts to 900 foot-pounds."])
    secret = make_channel("secret", name="Secret")
    return demo, secret


@pytest.fixture
def reader(channels):
    user = User.objects.create_user("rita", password="pw")  # not staff
    channels[0].readers.add(user)
    return user


@pytest.fixture
def fetcher(settings):
    """Client ID Metadata Documents served by test_cimd.DocumentFetcher."""
    settings.OAUTH2_PROVIDER = {
        **settings.OAUTH2_PROVIDER,
        "CIMD_METADATA_FETCHER": "signin.tests.test_cimd.DocumentFetcher",
    }
    from oauth2_provider.settings import oauth2_settings

    oauth2_settings.reload()
    yield
    oauth2_settings.reload()
