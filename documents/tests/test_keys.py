from datetime import timedelta

import pytest
from django.utils import timezone

from documents.access import COMMAND_LINE, AccessDenied, admit, digest_key
from documents.models import ApiKey
from documents.services.keys import create_api_key, revoke_api_key


def test_plain_key_is_never_stored(make_channel):
    """Only the SHA-256 digest and a short prefix of a new key reach the database."""
    channel = make_channel()
    new = create_api_key(actor=COMMAND_LINE, name="agent", channels=[channel])
    row = ApiKey.objects.values().get(pk=new.api_key.pk)
    assert new.raw_key not in {str(v) for v in row.values()}
    assert row["digest"] == digest_key(new.raw_key)
    assert new.raw_key.startswith(row["prefix"])


def test_key_opens_only_its_channels(make_channel):
    """A key authenticates for its channels and is refused (403) for others."""
    handbook, other = make_channel("handbook"), make_channel("other")
    new = create_api_key(actor=COMMAND_LINE, name="agent", channels=[handbook])
    assert admit(handbook.slug, new.raw_key, via="test").api_key == new.api_key
    with pytest.raises(AccessDenied) as excinfo:
        admit(other.slug, new.raw_key, via="test")
    assert excinfo.value.status == 403


@pytest.mark.parametrize("case", ["missing", "unknown", "revoked", "expired"])
def test_rejected_keys_get_401(make_channel, case):
    """Missing, unknown, revoked and expired keys are all 401."""
    channel = make_channel()
    new = create_api_key(actor=COMMAND_LINE, name="agent", channels=[channel])
    raw = new.raw_key
    if case == "missing":
        raw = ""
    elif case == "unknown":
        raw = raw[:-2] + "xx"
    elif case == "revoked":
        revoke_api_key(actor=COMMAND_LINE, api_key=new.api_key)
    else:
        new.api_key.expires_at = timezone.now() - timedelta(seconds=1)
        new.api_key.save()
    with pytest.raises(AccessDenied) as excinfo:
        admit(channel.slug, raw, via="test")
    assert excinfo.value.status == 401
