"""Syncing a folder into a channel (documents.services.sync): each test syncs,
changes the folder (add, modify, delete, rename, metadata), syncs again and
checks the channel's documents, revisions and audit rows."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from documents.models import AuditEvent, Document, DocumentRevision, Source, SourceSync
from documents.services.sync import summary
from documents.tests.syncing import add_folder_source, by_key, counts, sync, write

pytestmark = pytest.mark.django_db

Status = SourceSync.Status


def test_a_folder_syncs_adds_revises_skips_renames_and_removes(make_channel, folder):
    channel = make_channel(fields=[{"name": "product", "type": "string"}])
    write(folder / "pump.txt", "The pump manual, revision one.")
    write(folder / "valves" / "valve.txt", "Valves are closed by hand.")
    write(folder / "old.txt", "An old note that will be renamed.")
    source = add_folder_source(channel, folder, delete_removed=True)

    first = sync(source)
    assert first.status == Status.DONE, first.reason
    assert counts(first) == (3, 0, 0, 0, 0)
    documents = by_key(source)
    assert set(documents) == {"pump.txt", "valves/valve.txt", "old.txt"}
    pump = documents["pump.txt"]
    assert pump.status == Document.Status.PENDING and pump.source_sync_id == first.pk
    assert (
        "source manuals"
        in AuditEvent.objects.filter(action="document.upload", object_id=str(pump.pk))
        .get()
        .actor
    )

    # Nothing changed: nothing is opened, everything is unchanged.
    again = sync(source)
    assert counts(again) == (0, 0, 3, 0, 0)

    # Modify one, rename one, delete one, add one, give one metadata.
    write(folder / "pump.txt", "The pump manual, revision two, longer.")
    old_id = documents["old.txt"].pk
    (folder / "old.txt").rename(folder / "renamed.txt")
    (folder / "valves" / "valve.txt").unlink()
    write(folder / "new.txt", "A new document about seals.")
    write(folder / "new.txt.meta.json", json.dumps({"product": "Seal kit"}))

    third = sync(source)
    assert third.status == Status.DONE, third.reason
    # pump revised, old renamed (revised), new added, valve removed.
    assert counts(third) == (1, 2, 0, 1, 0), third.errors
    documents = by_key(source)
    assert set(documents) == {"pump.txt", "renamed.txt", "new.txt"}
    assert documents["renamed.txt"].pk == old_id
    assert documents["pump.txt"].pk == pump.pk
    assert documents["new.txt"].metadata == {"product": "Seal kit"}
    revisions = DocumentRevision.objects.filter(document=pump).order_by("number")
    assert [r.number for r in revisions] == [1, 2]
    assert AuditEvent.objects.filter(
        action="document.revise", object_id=str(pump.pk)
    ).exists()
    assert AuditEvent.objects.filter(action="document.delete").count() == 1
    assert AuditEvent.objects.filter(action="source.sync").count() == 3
    assert summary(third) == "added 1, revised 2, unchanged 0, removed 1, failed 0"

    # A metadata change alone edits the document without a new revision.
    write(folder / "new.txt.meta.json", json.dumps({"product": "Seal kit v2"}))
    fourth = sync(source)
    assert counts(fourth) == (0, 1, 2, 0, 0)
    new = Document.objects.get(pk=documents["new.txt"].pk)
    assert new.metadata == {"product": "Seal kit v2"}
    assert DocumentRevision.objects.filter(document=new).count() == 1


def test_removed_entries_are_kept_unless_the_source_deletes_them(make_channel, folder):
    channel = make_channel()
    write(folder / "a.txt", "Alpha text.")
    write(folder / "b.txt", "Beta text.")
    source = add_folder_source(channel, folder)
    sync(source)
    (folder / "b.txt").unlink()
    row = sync(source)
    assert (row.removed, row.kept) == (0, 1)
    assert set(by_key(source)) == {"a.txt", "b.txt"}


def test_an_empty_listing_never_removes_every_document(make_channel, folder):
    """An unmounted share looks like an empty folder: nothing is deleted."""
    channel = make_channel()
    write(folder / "a.txt", "Alpha text.")
    source = add_folder_source(channel, folder, delete_removed=True)
    sync(source)
    (folder / "a.txt").unlink()
    row = sync(source)
    assert row.status == Status.PARTIAL
    assert "listed nothing" in row.reason
    assert set(by_key(source)) == {"a.txt"}


def test_a_folder_that_disappears_fails_the_sync_and_loses_nothing(
    make_channel, folder
):
    channel = make_channel()
    write(folder / "a.txt", "Alpha text.")
    source = add_folder_source(channel, folder, delete_removed=True)
    sync(source)
    for path in folder.iterdir():
        path.unlink()
    folder.rmdir()
    row = sync(source)
    assert row.status == Status.FAILED
    assert "does not exist" in row.reason
    assert set(by_key(source)) == {"a.txt"}


def test_a_bad_entry_fails_alone_with_its_reason(make_channel, folder, settings):
    channel = make_channel(fields=[{"name": "year", "type": "number"}])
    write(folder / "good.txt", "Good text.")
    write(folder / "bad-meta.txt", "Text with bad metadata.")
    write(folder / "bad-meta.txt.meta.json", json.dumps({"year": "last spring"}))
    write(folder / "broken-json.txt", "Text with a broken sidecar.")
    write(folder / "broken-json.txt.meta.json", "{not json")
    (folder / "program.exe").write_bytes(b"MZ\x90\x00" + b"\x00" * 100)
    settings.UPLOAD_MAX_BYTES = 1000
    write(folder / "huge.txt", "x" * 5000)
    source = add_folder_source(channel, folder)

    row = sync(source)
    assert row.status == Status.DONE
    assert (row.added, row.failed) == (1, 4), row.errors
    reasons = {error["key"]: error["reason"] for error in row.errors}
    assert "year" in reasons["bad-meta.txt"]
    assert "not valid JSON" in reasons["broken-json.txt"]
    assert "unsupported" in reasons["program.exe"]
    assert "larger than" in reasons["huge.txt"]
    # A failed entry is tried again at the next sync (its version is not kept).
    write(folder / "bad-meta.txt.meta.json", json.dumps({"year": 2024}))
    second = sync(source)
    assert (second.added, second.unchanged, second.failed) == (1, 1, 3)
    assert by_key(source)["bad-meta.txt"].metadata == {"year": 2024}


def test_the_source_budget_is_checked_before_an_entry_is_read(
    make_channel, folder, settings
):
    channel = make_channel()
    for index in range(4):
        write(folder / f"doc{index}.txt", f"Document number {index}.")
    settings.SOURCE_MAX_DOCUMENTS = 2
    source = add_folder_source(channel, folder)
    row = sync(source)
    assert (row.added, row.failed) == (2, 2)
    assert all("SOURCE_MAX_DOCUMENTS" in e["reason"] for e in row.errors)


def test_metadata_can_come_from_path_segments_through_the_mapping(make_channel, folder):
    channel = make_channel(
        fields=[
            {"name": "product", "type": "string"},
            {"name": "team", "type": "string"},
        ]
    )
    write(folder / "pumps" / "p100.txt", "The P100 pump.")
    source = add_folder_source(
        channel, folder, metadata_map={"product": "path:0", "team": "owner"}
    )
    write(folder / "pumps" / "p100.txt.meta.json", json.dumps({"owner": "Field"}))
    sync(source)
    (document,) = by_key(source).values()
    assert document.metadata == {"product": "pumps", "team": "Field"}


def test_a_source_outside_the_declared_folders_is_refused(make_channel, tmp_path):
    from django.core.exceptions import ValidationError

    channel = make_channel()
    with pytest.raises(ValidationError, match="SOURCE_FOLDERS"):
        add_folder_source(channel, tmp_path)
    assert not Source.objects.exists()


def test_the_commands_add_and_sync_a_source(make_channel, folder, capsys):
    make_channel(slug="manuals")
    write(folder / "a.txt", "Alpha text.")
    call_command("add_source", "manuals", "folder", str(folder), "--every", "30")
    source = Source.objects.get()
    assert source.every_minutes == 30 and source.next_sync_at is not None
    call_command("sync_source", "manuals", "folder")
    out = capsys.readouterr().out
    assert "added 1, revised 0, unchanged 0, removed 0, failed 0" in out
    assert AuditEvent.objects.filter(action="source.add").exists()
