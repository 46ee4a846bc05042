"""The admission statement (documents.access.admission): channel, key checks,
scope and rate-limit counter in one round trip."""

import datetime

import pytest
from django.utils import timezone

from documents.access import COMMAND_LINE, AccessDenied
from documents.access import admit as admit_as
from documents.models import RateLimitWindow
from documents.services.keys import create_api_key, revoke_api_key


def admit(slug, raw_key):
    return admit_as(slug, raw_key, via="test")


pytestmark = pytest.mark.django_db


@pytest.fixture
def channels(make_channel):
    handbook = make_channel(
        "handbook", newest_sort=[{"field": "year", "direction": "desc"}]
    )
    return handbook, make_channel("wiki")


def counted(api_key) -> int:
    return sum(
        RateLimitWindow.objects.filter(subject=f"key:{api_key.pk}").values_list(
            "count", flat=True
        )
    )


def test_an_active_key_is_admitted_to_its_channel_and_counted(
    channels, steady_rate_window, django_assert_num_queries
):
    handbook, _ = channels
    new = create_api_key(actor=COMMAND_LINE, name="agent", channels=[handbook])
    admit("handbook", new.raw_key)  # the first use also records last_used_at
    with django_assert_num_queries(1):
        admission = admit("handbook", new.raw_key)
    assert admission.channel == handbook
    # Loaded as the ORM loads it: JSON fields are Python values, not text.
    assert admission.channel.newest_sort == [{"field": "year", "direction": "desc"}]
    assert admission.channel.max_pages_per_call == handbook.max_pages_per_call
    assert admission.api_key == new.api_key
    assert admission.api_key.prefix == new.raw_key[:10]
    assert counted(new.api_key) == 2


@pytest.mark.parametrize("raw_key", [None, "", "qk_not-a-key"])
def test_missing_or_unknown_keys_are_401(channels, raw_key):
    with pytest.raises(AccessDenied) as caught:
        admit("handbook", raw_key)
    assert caught.value.status == 401


def test_revoked_and_expired_keys_are_401_and_not_counted(channels):
    handbook, _ = channels
    revoked = create_api_key(actor=COMMAND_LINE, name="old", channels=[handbook])
    revoke_api_key(actor=COMMAND_LINE, api_key=revoked.api_key)
    expired = create_api_key(
        actor=COMMAND_LINE,
        name="late",
        channels=[handbook],
        expires_at=timezone.now() - datetime.timedelta(seconds=1),
    )
    for key, reason in [(revoked, "revoked"), (expired, "expired")]:
        with pytest.raises(AccessDenied, match=reason) as caught:
            admit("handbook", key.raw_key)
        assert caught.value.status == 401
        assert counted(key.api_key) == 0


def test_a_key_for_another_channel_is_403_and_not_counted(channels):
    _, wiki = channels
    new = create_api_key(actor=COMMAND_LINE, name="wiki only", channels=[wiki])
    with pytest.raises(AccessDenied) as caught:
        admit("handbook", new.raw_key)
    assert caught.value.status == 403
    assert counted(new.api_key) == 0


def test_an_unknown_channel_is_told_only_to_a_valid_key(channels):
    handbook, _ = channels
    new = create_api_key(actor=COMMAND_LINE, name="agent", channels=[handbook])
    admission = admit("nowhere", new.raw_key)
    assert admission.channel is None
    assert admission.api_key == new.api_key
    assert counted(new.api_key) == 0
    with pytest.raises(AccessDenied):
        admit("nowhere", "qk_guess")


def test_the_limit_refuses_the_request_after_the_last_allowed_one(
    channels, steady_rate_window, settings
):
    settings.MCP_RATE_LIMIT_PER_MINUTE = 3
    handbook, _ = channels
    new = create_api_key(actor=COMMAND_LINE, name="agent", channels=[handbook])
    for _ in range(3):
        admit("handbook", new.raw_key)
    with pytest.raises(AccessDenied) as caught:
        admit("handbook", new.raw_key)
    assert caught.value.status == 429
    assert caught.value.retry_after == 30  # seconds left in the pinned window


def test_no_limit_means_no_counter(channels, settings):
    settings.MCP_RATE_LIMIT_PER_MINUTE = 0
    handbook, _ = channels
    new = create_api_key(actor=COMMAND_LINE, name="agent", channels=[handbook])
    for _ in range(5):
        admit("handbook", new.raw_key)
    assert counted(new.api_key) == 0
