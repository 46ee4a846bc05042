"""Two syncs of one source never run at once: a sync held mid-listing (its
site waits before answering a page) keeps the source's lease, and a second
run, from another connection, does nothing but say so."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from documents.access import COMMAND_LINE
from documents.models import AuditEvent, SourceSync
from documents.services.sources import request_sync
from documents.services.sync import run_sync
from documents.tests.syncing import add_source, by_key

pytestmark = pytest.mark.django_db(transaction=True)

Status = SourceSync.Status


@pytest.fixture
def held_site(make_channel, site, settings):
    """A web source whose page /slow is not answered until released."""
    state, host = site
    settings.SOURCE_WEB_HOSTS = ["127.0.0.1"]
    settings.SOURCE_WEB_DELAY = 0.0
    state.page("/", '<html><body><p>Start page.</p><a href="/slow">s</a></body></html>')
    state.page("/slow", "<html><body><p>A slow page.</p></body></html>")
    release = state.hold("/slow")
    source = add_source(make_channel(), "web", {"url": f"http://{host}/"})
    return state, source, release


def in_thread(sync_id: int) -> tuple[threading.Thread, list[SourceSync]]:
    """run_sync(sync_id) in a thread of its own (its own connection)."""
    result: list[SourceSync] = []

    def work() -> None:
        try:
            result.append(run_sync(sync_id))
        finally:
            connection.close()

    thread = threading.Thread(target=work)
    thread.start()
    return thread, result


def test_a_second_sync_of_a_source_being_synced_fails_with_the_reason(held_site):
    state, source, release = held_site
    first, created = request_sync(
        source=source, actor=COMMAND_LINE, trigger="command", enqueue=False
    )
    thread, result = in_thread(first.pk)
    try:
        assert state.reached.wait(30)
        # Asking again while it runs gives the running one.
        again, created = request_sync(
            source=source, actor=COMMAND_LINE, trigger="admin", enqueue=False
        )
        assert (again.pk, created) == (first.pk, False)
        # A second row of the same source (as two workers would take) fails.
        other = SourceSync.objects.create(source=source, trigger="schedule")
        lost = run_sync(other.pk)
        assert lost.status == Status.FAILED
        assert "Another sync of this source was running" in lost.reason
        assert (lost.added, lost.listed) == (0, 0)
    finally:
        release.set()
        thread.join(60)
    (won,) = result
    assert (won.status, won.added) == (Status.DONE, 2), won.errors
    assert len(by_key(source)) == 2


def test_the_same_sync_run_twice_at_once_runs_once_and_is_not_failed(held_site):
    """A sync whose task runs twice at once (queued twice) is worked on by
    one run; the other leaves the row alone rather than failing it."""
    state, source, release = held_site
    row, _ = request_sync(
        source=source, actor=COMMAND_LINE, trigger="command", enqueue=False
    )
    thread, result = in_thread(row.pk)
    try:
        assert state.reached.wait(30)
        second = run_sync(row.pk)
        assert second.status in SourceSync.ACTIVE
        row.refresh_from_db()
        assert row.status in SourceSync.ACTIVE and not row.reason
    finally:
        release.set()
        thread.join(60)
    row.refresh_from_db()
    assert (row.status, row.added, row.attempts) == (Status.DONE, 2, 1)
    assert AuditEvent.objects.filter(action="source.sync").count() == 1
