"""The admin side of sources (issue 21): only superusers and a channel's
curators see, add, change, delete and sync its sources; the form never takes a
path outside SOURCE_FOLDERS or an undeclared store; sync rows are read-only,
with counts, errors and a progress bar; a synced document shows where it came
from."""

import re
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.test import Client
from django.urls import reverse

from documents.access import COMMAND_LINE
from documents.models import AuditEvent, Channel, Document, Source, SourceSync
from documents.services.sources import request_sync, save_source
from documents.services.sync import run_sync
from documents.tests.corpus import add_document

Status = SourceSync.Status

SOURCE_PERMISSIONS = [
    f"{verb}_{model}"
    for model in ("source", "sourcesync")
    for verb in ("view", "add", "change", "delete")
]


@pytest.fixture
def shared(tmp_path, settings) -> Path:
    """The one folder the operator declares, with a folder per channel."""
    root = tmp_path / "shared"
    for name in ("public", "secret"):
        (root / name).mkdir(parents=True)
        (root / name / f"{name}.txt").write_text(f"The {name} manual.")
    settings.SOURCE_FOLDERS = [str(root)]
    settings.SOURCE_S3_STORES = {
        "archive": {
            "endpoint_url": "http://127.0.0.1:9",
            "region": "us-east-1",
            "access_key_env": "QUIRE_TEST_S3_KEY",
            "secret_key_env": "QUIRE_TEST_S3_SECRET",
            "session_token_env": "",
            "addressing_style": "path",
            "buckets": [],
            "timeout": 30,
        }
    }
    return root


def folder_source(channel: Channel, path: Path, name: str = "manuals") -> Source:
    return save_source(
        source=Source(
            channel=channel, name=name, kind="folder", config={"path": str(path)}
        ),
        actor=COMMAND_LINE,
    )


@pytest.fixture
def two_sources(make_channel, shared):
    public = make_channel("public", name="Public channel")
    secret = make_channel("secret", name="Secret channel")
    return (
        folder_source(public, shared / "public", "public manuals"),
        folder_source(secret, shared / "secret", "secret manuals"),
    )


def staff_member(username: str, *, curates: Channel | None = None) -> User:
    """A staff user with every source permission, curating `curates` (through
    a group) or nothing."""
    user = User.objects.create_user(username, password="pw", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(codename__in=SOURCE_PERMISSIONS)
    )
    if curates is not None:
        group = Group.objects.create(name=f"curators of {curates.slug}")
        user.groups.add(group)
        curates.curator_groups.add(group)
    return user


def logged_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def url(view: str, *args) -> str:
    return reverse(f"admin:documents_{view}", args=args)


def form_data(channel: Channel, **values) -> dict:
    return {
        "name": "handbooks",
        "channel": str(channel.pk),
        "kind": "folder",
        "location": "",
        "store": "",
        "max_pages": "",
        "metadata_map": "{}",
        "every_minutes": "",
        "enabled": "on",
        **values,
    }


def shown(page: str, field: str) -> str:
    """The read-only value of `field` on an admin page."""
    found = re.search(
        rf'field-{field}">.*?<div class="readonly">(.*?)</div>', page, re.S
    )
    assert found, field
    return found.group(1)


def queued_sync(source: Source) -> SourceSync:
    sync, created = request_sync(
        source=source, actor=COMMAND_LINE, trigger="command", enqueue=False
    )
    assert created
    return sync


def test_a_curator_manages_only_their_channels_sources(two_sources, shared):
    """A curator lists, adds, changes and deletes their channel's sources
    (saved and deleted through the audited services) and reaches nothing of
    another channel's: not its page, its deletion, nor the channel in the form."""
    public_source, secret_source = two_sources
    public, secret = public_source.channel, secret_source.channel
    curator = staff_member("carol", curates=public)
    client = logged_in(curator)

    listing = client.get(url("source_changelist")).content.decode()
    assert "public manuals" in listing and "secret manuals" not in listing
    assert str(shared / "public") in listing  # describe(): kind and location
    assert client.get(url("source_change", public_source.pk)).status_code == 200
    for view in ("source_change", "source_delete"):
        response = client.get(url(view, secret_source.pk))
        assert response.status_code in (302, 404), view
        assert b"secret manuals" not in response.content

    # The add form offers only the curator's channels, and refuses the other.
    add_page = client.get(url("source_add")).content.decode()
    assert "Public channel" in add_page and "Secret channel" not in add_page
    refused = client.post(
        url("source_add"),
        form_data(secret, location=str(shared / "secret"), name="sneaky"),
    )
    assert refused.status_code == 200
    assert not Source.objects.filter(name="sneaky").exists()

    added = client.post(
        url("source_add"),
        form_data(public, location=str(shared / "public"), every_minutes="60"),
    )
    assert added.status_code == 302, added.content.decode()[:2000]
    source = Source.objects.get(name="handbooks")
    assert source.channel == public and source.config == {
        "path": str(shared / "public")
    }
    assert source.created_by == curator and source.next_sync_at is not None
    event = AuditEvent.objects.get(action="source.add", object_id=str(source.pk))
    assert "carol" in event.actor and event.via == "admin"

    # Changing goes through save_source (audited); the channel stays fixed.
    changed = client.post(
        url("source_change", source.pk),
        form_data(public, location=str(shared / "public"), name="handbooks v2"),
    )
    assert changed.status_code == 302
    source.refresh_from_db()
    assert source.name == "handbooks v2" and source.next_sync_at is None
    assert AuditEvent.objects.filter(action="source.change").count() == 1
    assert client.post(
        url("source_change", secret_source.pk),
        form_data(public, location=str(shared / "public"), name="taken"),
    ).status_code in (302, 404)
    secret_source.refresh_from_db()
    assert secret_source.name == "secret manuals"

    # Deleting: their own goes (audited), the other channel's stays.
    client.post(
        url("source_changelist"),
        {
            "action": "delete_selected",
            "_selected_action": [secret_source.pk],
            "post": "yes",
        },
    )
    assert Source.objects.filter(pk=secret_source.pk).exists()
    assert (
        client.post(url("source_delete", source.pk), {"post": "yes"}).status_code == 302
    )
    assert not Source.objects.filter(pk=source.pk).exists()
    assert AuditEvent.objects.filter(action="source.delete").count() == 1


def test_sync_now_queues_one_sync_for_those_who_may_change_the_source(two_sources):
    """Sync now is a POST that queues one admin sync as the signed-in user;
    again while it is queued says so and queues nothing; another channel's
    source, a user without change_source, or one who curates nothing gets no
    sync."""
    public_source, secret_source = two_sources
    curator = staff_member("carol", curates=public_source.channel)
    client = logged_in(curator)

    page = client.get(url("source_change", public_source.pk)).content.decode()
    assert '<button type="submit">Sync now</button>' in page
    assert url("source_sync", public_source.pk) in page
    assert client.get(url("source_sync", public_source.pk)).status_code == 405

    response = client.post(url("source_sync", public_source.pk), follow=True)
    assert "Queued a sync of “public manuals”" in response.content.decode()
    sync = SourceSync.objects.get(source=public_source)
    assert sync.trigger == SourceSync.Trigger.ADMIN and sync.status == Status.QUEUED
    assert sync.requested_by == curator and "carol" in sync.actor

    again = client.post(url("source_sync", public_source.pk), follow=True)
    assert "already queued" in again.content.decode()
    assert SourceSync.objects.filter(source=public_source).count() == 1

    # Another channel's source: not found, nothing queued.
    assert client.post(url("source_sync", secret_source.pk)).status_code in (302, 404)
    assert not SourceSync.objects.filter(source=secret_source).exists()

    # Without the change permission there is no button and no sync.
    curator.user_permissions.remove(Permission.objects.get(codename="change_source"))
    viewer = logged_in(User.objects.get(pk=curator.pk))
    SourceSync.objects.all().delete()
    assert (
        url("source_sync", public_source.pk)
        not in viewer.get(url("source_change", public_source.pk)).content.decode()
    )
    assert viewer.post(url("source_sync", public_source.pk)).status_code == 403
    assert not SourceSync.objects.exists()

    # A staff member who curates nothing sees no source and can add none.
    outsider = logged_in(staff_member("oscar"))
    listing = outsider.get(url("source_changelist")).content.decode()
    assert "public manuals" not in listing and "secret manuals" not in listing
    assert outsider.get(url("source_add")).status_code == 403
    assert outsider.post(url("source_sync", public_source.pk)).status_code in (302, 404)
    assert not SourceSync.objects.exists()


def test_sync_rows_are_read_only_and_scoped_to_the_channel(two_sources, admin_client):
    """Sync rows show only the curated channels'; nobody adds or changes one;
    a curator cannot delete one even with the permission, a superuser can."""
    public_source, secret_source = two_sources
    public_sync, secret_sync = queued_sync(public_source), queued_sync(secret_source)
    client = logged_in(staff_member("carol", curates=public_source.channel))

    listing = client.get(url("sourcesync_changelist")).content.decode()
    assert "public manuals" in listing and "secret manuals" not in listing
    assert client.get(url("sourcesync_change", public_sync.pk)).status_code == 200
    assert client.get(url("sourcesync_change", secret_sync.pk)).status_code in (
        302,
        404,
    )
    # Nobody adds or changes one by hand; only a superuser deletes one, even
    # with the delete permission.
    assert client.get(url("sourcesync_add")).status_code == 403
    assert admin_client.get(url("sourcesync_add")).status_code == 403
    page = client.get(url("sourcesync_change", public_sync.pk)).content.decode()
    assert 'name="_save"' not in page
    assert (
        client.post(
            url("sourcesync_delete", public_sync.pk), {"post": "yes"}
        ).status_code
        == 403
    )
    assert SourceSync.objects.filter(pk=public_sync.pk).exists()

    superuser_listing = admin_client.get(url("sourcesync_changelist")).content.decode()
    assert (
        "public manuals" in superuser_listing and "secret manuals" in superuser_listing
    )
    assert admin_client.get(url("source_change", secret_source.pk)).status_code == 200
    assert (
        admin_client.post(
            url("sourcesync_delete", secret_sync.pk), {"post": "yes"}
        ).status_code
        == 302
    )
    assert not SourceSync.objects.filter(pk=secret_sync.pk).exists()


def test_a_folder_outside_the_declared_roots_is_refused_with_its_reason(
    make_channel, shared, tmp_path, admin_client
):
    """A folder outside SOURCE_FOLDERS, named or reached through "..", is
    refused with the reason on the form; nothing is saved or audited."""
    channel = make_channel("public")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    response = admin_client.post(
        url("source_add"), form_data(channel, location=str(elsewhere))
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert "is not under a folder the operator declared in SOURCE_FOLDERS" in page
    assert not Source.objects.exists()
    assert not AuditEvent.objects.filter(action="source.add").exists()

    # A traversal out of the root is the same folder, and as refused.
    sneaky = f"{shared}/public/../../elsewhere"
    response = admin_client.post(url("source_add"), form_data(channel, location=sneaky))
    assert "is not under a folder the operator declared" in response.content.decode()
    assert not Source.objects.exists()


def test_an_undeclared_store_or_a_bad_mapping_is_refused(
    make_channel, shared, admin_client
):
    """The store is a choice of SOURCE_S3_STORES: another name is refused with
    the reason, as a mapping naming a field the channel lacks or a malformed
    path segment; a declared store saves its bucket and prefix from the line."""
    channel = make_channel("public", fields=[{"name": "product", "type": "string"}])
    page = admin_client.get(url("source_add")).content.decode()
    assert re.search(r"<option value=\"archive\">archive</option>", page)

    response = admin_client.post(
        url("source_add"),
        form_data(channel, kind="s3", location="manuals/2026", store="elsewhere"),
    )
    assert response.status_code == 200
    assert (
        "elsewhere is not a store the operator declared in SOURCE_S3_STORES"
        in response.content.decode()
    )
    response = admin_client.post(
        url("source_add"),
        form_data(
            channel,
            location=str(shared / "public"),
            metadata_map='{"colour": "x-colour", "product": "path:first"}',
        ),
    )
    page = response.content.decode()
    assert "&#x27;colour&#x27; is not a metadata field of this channel." in page
    assert "a path segment is path: and a number" in page
    assert not Source.objects.exists()

    # A declared store is taken, its bucket and prefix from the one line.
    response = admin_client.post(
        url("source_add"),
        form_data(channel, kind="s3", location="manuals/2026", store="archive"),
    )
    assert response.status_code == 302
    source = Source.objects.get()
    assert source.config == {"store": "archive", "bucket": "manuals", "prefix": "2026"}
    page = admin_client.get(url("source_change", source.pk)).content.decode()
    assert 'value="s3://manuals/2026"' in page
    assert (
        "s3://manuals/2026 in archive"
        in admin_client.get(url("source_changelist")).content.decode()
    )


def test_a_running_sync_shows_its_progress_counts_and_errors(two_sources, admin_client):
    """A syncing row shows a progress bar (done of listed), its counts and
    failed entries, and reloads itself; a listing one its entries so far; a
    finished one stays put with its reason; the source's page and list link it."""
    source, _ = two_sources
    sync = queued_sync(source)
    SourceSync.objects.filter(pk=sync.pk).update(
        status=Status.SYNCING,
        listed=10,
        processed=4,
        added=2,
        revised=1,
        unchanged=1,
        failed=1,
        errors=[{"key": "big/manual.pdf", "reason": "The file is larger than 1 MB."}],
    )
    page = admin_client.get(url("sourcesync_change", sync.pk)).content.decode()
    assert "<progress class='quire-progress' value='4' max='10'></progress>" in page
    assert "4 of 10 entries" in page
    counts = {
        name: shown(page, name)
        for name in ("added", "revised", "unchanged", "removed", "kept", "failed")
    }
    assert counts == {
        "added": "2",
        "revised": "1",
        "unchanged": "1",
        "removed": "0",
        "kept": "0",
        "failed": "1",
    }
    assert "<td>big/manual.pdf</td><td>The file is larger than 1 MB.</td>" in page
    assert '<meta http-equiv="refresh" content="5">' in page

    SourceSync.objects.filter(pk=sync.pk).update(status=Status.LISTING, listed=37)
    page = admin_client.get(url("sourcesync_change", sync.pk)).content.decode()
    assert "37 listed so far" in page and 'http-equiv="refresh"' in page

    # The source's page and list link to it.
    assert (
        url("sourcesync_change", sync.pk)
        in admin_client.get(url("source_change", source.pk)).content.decode()
    )
    assert (
        url("sourcesync_change", sync.pk)
        in admin_client.get(url("source_changelist")).content.decode()
    )

    # A finished sync stays put and shows its reason.
    SourceSync.objects.filter(pk=sync.pk).update(
        status=Status.FAILED, reason="The folder went away mid-listing."
    )
    page = admin_client.get(url("sourcesync_change", sync.pk)).content.decode()
    assert 'http-equiv="refresh"' not in page and "<progress" not in page
    assert "The folder went away mid-listing." in page


def test_a_synced_document_shows_its_provenance(
    two_sources, admin_client, fake_embedder
):
    """A synced document's page links its source and last sync, shows its key,
    and links its source URL only when it is http(s); an upload has no source
    part."""
    source, _ = two_sources
    sync = run_sync(queued_sync(source).pk)
    assert sync.status == Status.DONE, sync.reason
    document = Document.objects.get(source=source)
    page = admin_client.get(url("document_change", document.pk)).content.decode()
    assert f"<a href='{url('source_change', source.pk)}'>public manuals</a>" in page
    assert "public.txt" in page
    assert f"<a href='{url('sourcesync_change', sync.pk)}'>sync {sync.pk}</a>" in page

    Document.objects.filter(pk=document.pk).update(
        source_url="https://example.org/a?b=1"
    )
    page = admin_client.get(url("document_change", document.pk)).content.decode()
    assert (
        "<a href='https://example.org/a?b=1' rel='noreferrer noopener'>"
        "https://example.org/a?b=1</a>" in page
    )
    Document.objects.filter(pk=document.pk).update(source_url="javascript:alert(1)")
    page = admin_client.get(url("document_change", document.pk)).content.decode()
    assert "javascript:alert(1)" in page and "href='javascript" not in page

    # An upload has no source part at all.
    uploaded = add_document(source.channel, title="Uploaded", pages=["By hand."])
    page = admin_client.get(url("document_change", uploaded.pk)).content.decode()
    assert "Key in source" not in page and "Last sync" not in page


def test_the_lists_take_a_fixed_number_of_queries(
    make_channel, shared, admin_client, django_assert_max_num_queries
):
    """The source and sync lists show each source's last sync and each sync's
    source without a query per row."""
    channel = make_channel("public")
    for number in range(6):
        source = folder_source(channel, shared / "public", f"manuals {number}")
        for _ in range(2):
            sync = queued_sync(source)
            SourceSync.objects.filter(pk=sync.pk).update(status=Status.DONE)
    with django_assert_max_num_queries(12):
        page = admin_client.get(url("source_changelist")).content.decode()
    assert page.count(">Done</span>") == 6
    with django_assert_max_num_queries(12):
        page = admin_client.get(url("sourcesync_changelist")).content.decode()
    assert page.count(">Done</span>") == 12
