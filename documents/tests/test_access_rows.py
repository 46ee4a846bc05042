"""The admission's key and channel instances, kept per row version
(documents.access.rows): every change to a row is seen on the very next call,
and no call sees what another did to its instances."""

import asyncio

import pytest

from documents.access import COMMAND_LINE, AccessDenied, aadmit_pooled, admit, rows
from documents.access import pool as admission_pool
from documents.models import ApiKey, Channel
from documents.services.keys import create_api_key, revoke_api_key

# The pool's connections are its own: the rows must be committed.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def pool_on(settings):
    settings.MCP_ADMISSION_POOL_SIZE = 2
    rows.forget()
    yield
    admission_pool.forget()
    rows.forget()


def pooled(slug: str, raw_key: str, between=None, calls: int = 3):
    """Admit `calls` times in one event loop through the pool; `between(i)`
    runs (in a thread, through the ORM) after the i-th. The outcomes."""

    async def main():
        outcomes = []
        try:
            for index in range(calls):
                try:
                    outcomes.append(await aadmit_pooled(slug, raw_key, via="test"))
                except AccessDenied as refusal:
                    outcomes.append(refusal)
                if between is not None:
                    await asyncio.to_thread(between, index)
        finally:
            await admission_pool.close()
        return outcomes

    return asyncio.run(main())


def test_a_key_revoked_after_kept_calls_is_refused_on_the_next_one(
    make_channel, steady_rate_window
):
    handbook = make_channel("handbook")
    new = create_api_key(actor=COMMAND_LINE, name="agent", channels=[handbook])

    def revoke_after_second(index):
        if index == 1:
            revoke_api_key(
                api_key=ApiKey.objects.get(pk=new.api_key.pk), actor=COMMAND_LINE
            )

    outcomes = pooled("handbook", new.raw_key, revoke_after_second)
    assert [getattr(outcome, "status", 200) for outcome in outcomes] == [200, 200, 401]
    assert "revoked" in str(outcomes[2])
    with pytest.raises(AccessDenied, match="revoked"):
        admit("handbook", new.raw_key, via="test")


def test_a_key_whose_scopes_or_expiry_changed_is_checked_with_the_new_ones(
    make_channel, steady_rate_window
):
    handbook = make_channel("handbook")
    new = create_api_key(actor=COMMAND_LINE, name="agent", channels=[handbook])
    first = admit("handbook", new.raw_key, via="test")
    assert "read" in first.api_key.scopes
    ApiKey.objects.filter(pk=new.api_key.pk).update(scopes=["write"])
    with pytest.raises(AccessDenied, match="'read' scope"):
        admit("handbook", new.raw_key, via="test")
    ApiKey.objects.filter(pk=new.api_key.pk).update(
        scopes=["read"], expires_at=steady_rate_window
    )
    with pytest.raises(AccessDenied, match="expired"):
        admit("handbook", new.raw_key, via="test")


def test_a_channel_changed_without_a_new_version_is_seen_on_the_next_call(
    make_channel, steady_rate_window
):
    """Even a change that leaves updated_at and corpus_version alone (an
    update() of the row) gives the next call the new values."""
    handbook = make_channel("handbook")
    new = create_api_key(actor=COMMAND_LINE, name="agent", channels=[handbook])

    def change_after_first(index):
        if index == 0:
            Channel.objects.filter(pk=handbook.pk).update(
                mcp_instructions="Cite the page.", tool_switches={"get_pages": False}
            )

    first, second, third = pooled("handbook", new.raw_key, change_after_first)
    assert first.channel.mcp_instructions == ""
    assert second.channel.mcp_instructions == "Cite the page."
    assert second.channel.tool_switches == {"get_pages": False}
    assert third.channel.tool_switches == {"get_pages": False}


def test_a_key_taken_off_the_channel_is_refused_on_the_next_call(
    make_channel, steady_rate_window
):
    handbook = make_channel("handbook")
    new = create_api_key(actor=COMMAND_LINE, name="agent", channels=[handbook])

    def close_after_first(index):
        if index == 0:
            ApiKey.objects.get(pk=new.api_key.pk).channels.clear()

    outcomes = pooled("handbook", new.raw_key, close_after_first, calls=2)
    assert [getattr(outcome, "status", 200) for outcome in outcomes] == [200, 403]


def test_what_one_call_changes_on_its_instances_no_other_call_sees(
    make_channel, steady_rate_window
):
    handbook = make_channel(
        "handbook", newest_sort=[{"field": "year", "direction": "desc"}]
    )
    new = create_api_key(actor=COMMAND_LINE, name="agent", channels=[handbook])
    # The first call builds the instances, the second is given them kept.
    earlier = [admit("handbook", new.raw_key, via="test") for _ in range(2)]
    for caller in earlier:
        caller.channel.name = "Changed"
        caller.channel.newest_sort.append({"field": "title", "direction": "asc"})
        caller.api_key.scopes.append("write")
        caller.channel._state.fields_cache["owner"] = object()
    second = admit("handbook", new.raw_key, via="test")
    for caller in earlier:
        assert second.channel is not caller.channel
        assert second.api_key is not caller.api_key
    assert second.channel.name == "Handbook"
    assert second.channel.newest_sort == [{"field": "year", "direction": "desc"}]
    assert second.api_key.scopes == new.api_key.scopes
    assert second.channel._state.fields_cache == {}
    assert not second.channel._state.adding
    assert second.channel == Channel.objects.get(pk=handbook.pk)


def test_a_kept_instance_equals_what_the_orm_loads(make_channel, steady_rate_window):
    handbook = make_channel(
        "handbook",
        fields=[{"name": "year", "type": "number", "filterable": True}],
        newest_sort=[{"field": "year", "direction": "desc"}],
    )
    new = create_api_key(actor=COMMAND_LINE, name="agent", channels=[handbook])
    callers = [admit("handbook", new.raw_key, via="test") for _ in range(2)]
    loaded_channel = Channel.objects.get(pk=handbook.pk)
    loaded_key = ApiKey.objects.get(pk=new.api_key.pk)
    for caller in callers:
        for field in Channel._meta.concrete_fields:
            assert getattr(caller.channel, field.attname) == getattr(
                loaded_channel, field.attname
            ), field.name
        for field in ApiKey._meta.concrete_fields:
            if field.attname != "last_used_at":  # noted by the first admission
                assert getattr(caller.api_key, field.attname) == getattr(
                    loaded_key, field.attname
                ), field.name
