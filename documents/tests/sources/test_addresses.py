"""The web source's address rules, on resolved addresses: allowed hosts by
name, public addresses only when the operator says so, and addresses no
configuration reaches (cloud metadata, link-local, multicast, reserved)."""

import pytest

from documents.sources.base import SourceError
from documents.sources.web.addresses import policy_from


def policy(hosts=(), *, public_only=False, answers=None):
    answers = answers or {}
    return policy_from(
        hosts, public_only=public_only, resolver=lambda host, port: answers[host]
    )


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("10.0.0.5", "private"),
        ("192.168.1.1", "private"),
        ("fd12::1", "private"),
        ("100.64.0.1", "not a public address"),
        ("169.254.169.254", "cloud metadata"),
        ("fd00:ec2::254", "cloud metadata"),
        ("169.254.10.1", "link-local"),
        ("fe80::1", "link-local"),
        ("224.0.0.1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("240.0.0.1", "reserved"),
        ("::ffff:127.0.0.1", "loopback"),
        ("64:ff9b::a9fe:a9fe", "cloud metadata"),
        ("2002:a00:1::", "private"),
    ],
)
def test_public_only_refuses_every_non_public_address(address, reason):
    with pytest.raises(SourceError, match=reason):
        policy(public_only=True, answers={"h.example": [address]}).allowed(
            "h.example", 80
        )


def test_public_addresses_pass_and_one_bad_address_refuses_the_host():
    """A host is refused when any of its addresses is not public, so a split
    answer cannot smuggle a connection inside."""
    good = policy(public_only=True, answers={"h.example": ["93.184.215.14"]})
    assert good.allowed("h.example", 443) == ["93.184.215.14"]
    split = policy(
        public_only=True, answers={"h.example": ["93.184.215.14", "10.0.0.1"]}
    )
    with pytest.raises(SourceError, match="10.0.0.1, a private address"):
        split.allowed("h.example", 443)


def test_allowed_hosts_may_be_internal_but_never_metadata():
    """A host the operator names may resolve to a private address (an
    intranet wiki), never to the metadata service; other hosts are refused
    when public-only mode is off."""
    rules = policy(
        ["wiki.internal", "docs.internal:8080"],
        answers={"wiki.internal": ["10.0.0.7"], "docs.internal": ["169.254.169.254"]},
    )
    assert rules.allowed("WIKI.internal.", 80) == ["10.0.0.7"]
    with pytest.raises(SourceError, match="cloud metadata"):
        rules.allowed("docs.internal", 8080)
    with pytest.raises(SourceError, match="not a host the operator allows"):
        rules.allowed("docs.internal", 80)
    with pytest.raises(SourceError, match="not a host the operator allows"):
        rules.allowed("example.com", 80)
