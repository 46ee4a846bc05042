"""The caller (documents.access.caller) and its one rule, as every door meets it
(issue 19): citation links signed for a caller and re-admitted on every open,
a token's scopes at most its grant's, originals served safely, and the audit
gaps outside sign-in."""

import ast
import datetime
import io
import secrets
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission, User
from django.core.files.base import ContentFile
from django.core.management import call_command
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import get_access_token_model, get_application_model

from documents.access import COMMAND_LINE, AccessDenied, Caller, Scope, admit
from documents.models import AuditEvent, Document
from documents.services.channels import create_channel
from documents.services.grants import record_sign_in_grant, revoke_sign_in_grant
from documents.services.keys import create_api_key, revoke_api_key, update_api_key
from documents.tests.corpus import add_document
from documents.tests.test_admin import channel_form_data
from mcp_endpoint.citations import citation_page_url, citation_url
from mcp_endpoint.tests.conftest import McpClient

pytestmark = pytest.mark.django_db
BASE = "http://testserver"
ACCESS = Path(__file__).resolve().parents[1] / "access"


@pytest.fixture
def demo(make_channel, fake_embedder):
    channel = make_channel("demo", name="Demo")
    add_document(channel, title="Torque", pages=["Torque the nuts to 900 ft-lb."])
    return channel


@pytest.fixture
def rita(demo):
    """A reader of the demo channel (not staff, as sign-in users are)."""
    user = User.objects.create_user("rita", password="pw")
    demo.readers.add(user)
    return user


def sign_in(
    user, channel, *, grant_scopes=("read",), token_scope="read", resource=None
):
    """A sign-in grant and an access token under it, as the OAuth flow leaves
    them (the flow itself is signin's tests' subject)."""
    application = get_application_model().objects.create(
        name="Client C",
        client_type="public",
        authorization_grant_type="authorization-code",
        redirect_uris="http://127.0.0.1:1/cb",
    )
    resource = resource or f"{BASE}/mcp/{channel.slug}"
    grant = record_sign_in_grant(
        user=user,
        application=application,
        channel=channel,
        resource=resource,
        scopes=list(grant_scopes),
    )
    raw = secrets.token_urlsafe(24)
    get_access_token_model().objects.create(
        user=user,
        application=application,
        token=raw,
        expires=timezone.now() + datetime.timedelta(hours=1),
        scope=token_scope,
        resource=[resource],
    )
    return grant, raw


def opens(url: str) -> int:
    return Client().get(url.removeprefix(BASE).removesuffix("#quote")).status_code


def links_for(caller: Caller, document: Document) -> list[str]:
    return [
        citation_url(document, base_url=BASE, caller=caller),
        citation_page_url(document, base_url=BASE, page=1, caller=caller),
    ]


def assert_links(urls: list[str], status: int) -> None:
    assert [opens(url) for url in urls] == [status] * len(urls)


# --- Citation links are re-admitted on every open (finding 5) ---------------------


def test_a_key_link_ends_when_the_key_is_revoked(demo):
    """A link signed for a key opens while the key does, and not after."""
    key = create_api_key(actor=COMMAND_LINE, name="agent", channels=[demo]).api_key
    urls = links_for(Caller(via="mcp", api_key=key), demo.documents.get())
    assert_links(urls, 200)
    revoke_api_key(api_key=key, actor=COMMAND_LINE)
    assert_links(urls, 403)


def test_a_key_link_ends_when_the_key_loses_the_channel(demo, make_channel):
    """Taking the channel off the key ends its links to that channel."""
    other = make_channel("other")
    key = create_api_key(actor=COMMAND_LINE, name="agent", channels=[demo]).api_key
    urls = links_for(Caller(via="mcp", api_key=key), demo.documents.get())
    assert_links(urls, 200)
    update_api_key(
        api_key=key,
        actor=COMMAND_LINE,
        name=key.name,
        scopes=key.scopes,
        expires_at=None,
        channels=[other],
    )
    assert_links(urls, 403)


def test_a_sign_in_link_ends_when_the_user_is_removed_as_reader(demo, rita):
    """Issue 19, finding 5: a link made under a sign-in grant answered 200 after
    the user lost the channel, until CITATION_URL_MAX_AGE. Now it is refused
    at once, like the token."""
    grant, _ = sign_in(rita, demo)
    urls = links_for(Caller(via="mcp", user=rita, grant=grant), demo.documents.get())
    assert_links(urls, 200)
    demo.readers.remove(rita)
    assert_links(urls, 403)


def test_a_sign_in_link_ends_when_the_user_is_deactivated(demo, rita):
    """Deactivating the account ends the links made under its grants."""
    grant, _ = sign_in(rita, demo)
    urls = links_for(Caller(via="mcp", user=rita, grant=grant), demo.documents.get())
    assert_links(urls, 200)
    rita.is_active = False
    rita.save(update_fields=["is_active"])
    assert_links(urls, 403)


def test_a_sign_in_link_ends_when_the_grant_is_revoked(demo, rita):
    """Revoking the sign-in grant ends its links."""
    grant, _ = sign_in(rita, demo)
    urls = links_for(Caller(via="mcp", user=rita, grant=grant), demo.documents.get())
    assert_links(urls, 200)
    revoke_sign_in_grant(grant=grant, actor=COMMAND_LINE)
    assert_links(urls, 403)


def test_links_made_over_mcp_with_a_token_follow_its_grant(demo, rita):
    """End to end: get_citation_url called with a sign-in token gives a link
    that stops when the user is removed as reader."""
    _, token = sign_in(rita, demo)
    document = demo.documents.get()
    result = McpClient("demo", token).call_tool_expecting_success(
        "get_citation_url", {"document_ids": [document.pk]}
    )
    url = result["structuredContent"][str(document.pk)]
    assert opens(url) == 200
    demo.readers.remove(rita)
    assert opens(url) == 403


def test_a_session_link_follows_the_persons_role(demo, rita):
    """The playground's links (user:<id>) follow the person's reader role."""
    urls = links_for(Caller(via="playground", user=rita), demo.documents.get())
    assert_links(urls, 200)
    demo.readers.remove(rita)
    assert_links(urls, 403)


def test_an_unknown_subject_may_do_nothing(demo):
    """A subject that names nothing (or a deleted key) is a caller without
    credentials: no scopes anywhere."""
    for subject in ("key:999999", "grant:0", "user:x", "nobody", ""):
        caller = Caller.from_subject(subject, via="citation")
        assert caller.scopes_on(demo.pk) == frozenset(), subject


# --- The rule itself ---------------------------------------------------------


def test_a_tokens_scopes_are_at_most_its_grants(demo, rita):
    """Issue 19, finding 1 (the caller's half): a token that says "read write"
    under a read-only grant is refused a write, over the REST API as by
    admit, and the caller holds only read."""
    demo.curators.add(rita)  # the role would allow writing: the grant doesn't
    grant, token = sign_in(rita, demo, grant_scopes=["read"], token_scope="read write")
    caller = admit(
        "demo", token, scope=Scope.READ, via="rest", resource=f"{BASE}/mcp/demo"
    )
    assert caller.grant == grant
    assert caller.granted_scopes() == {"read"}
    assert caller.scopes_on(demo.pk) == {"read"}
    with pytest.raises(AccessDenied) as refused:
        admit("demo", token, scope=Scope.WRITE, via="rest", resource=f"{BASE}/mcp/demo")
    assert refused.value.status == 403 and refused.value.missing_scope == "write"
    rest = Client(headers={"Authorization": f"Bearer {token}"})
    upload = rest.post(
        "/api/channels/demo/documents",
        {"file": ContentFile(b"x", name="x.txt")},
    )
    assert upload.status_code == 403


def test_write_needs_a_curator_behind_the_sign_in(demo, rita):
    """A write grant held by a mere reader gives read only."""
    grant = sign_in(
        rita, demo, grant_scopes=["read", "write"], token_scope="read write"
    )[0]
    caller = Caller(via="mcp", user=rita, grant=grant)
    assert caller.granted_scopes() == {"read", "write"}
    assert caller.scopes_on(demo.pk) == {"read"}
    demo.curators.add(rita)
    assert caller.scopes_on(demo.pk) == {"read", "write"}


def test_a_key_callers_rule_matches_the_admission_statement(demo, make_channel):
    """Caller.scopes_on (links, the playground) and admit's one statement (MCP,
    REST) agree on a key: the channel it opens, the scopes it has, revoked."""
    other = make_channel("other")
    new = create_api_key(
        actor=COMMAND_LINE, name="w", channels=[demo], scopes=["write"]
    )
    caller = Caller(via="mcp", api_key=new.api_key)
    for channel in (demo, other):
        for scope in Scope.values:
            try:
                admit(channel.slug, new.raw_key, scope=scope, via="mcp")
                admitted = True
            except AccessDenied:
                admitted = False
            assert caller.may(channel.pk, scope) is admitted, (channel.slug, scope)
    revoke_api_key(api_key=new.api_key, actor=COMMAND_LINE)
    new.api_key.refresh_from_db()
    assert caller.scopes_on(demo.pk) == frozenset()
    with pytest.raises(AccessDenied):
        admit("demo", new.raw_key, via="mcp")


def test_subjects_and_actor(demo, rita):
    """The caller names its limits' subject and its audit actor the same way
    the rate windows and the trail do."""
    key = create_api_key(actor=COMMAND_LINE, name="agent", channels=[demo]).api_key
    grant, _ = sign_in(rita, demo)
    assert Caller(via="mcp", api_key=key).subject == f"key:{key.pk}"
    assert Caller(via="mcp", user=rita, grant=grant).subject == f"grant:{grant.pk}"
    assert Caller(via="playground", user=rita).subject == f"user:{rita.pk}"
    assert Caller(via="command").subject == ""
    actor = Caller(via="rest", api_key=key, address="10.0.0.5").actor
    assert (actor.via, actor.api_key, actor.address) == ("rest", key, "10.0.0.5")
    assert Caller(via="mcp", api_key=key).limited
    assert not Caller(via="playground", user=rita).limited


def test_a_token_whose_resource_had_a_trailing_slash_lists_its_channel(demo, rita):
    """Issue 19: a token issued for `.../mcp/demo/` was refused on
    /api/channels (the grant's resource was compared as stored)."""
    _, token = sign_in(rita, demo, resource=f"{BASE}/mcp/demo/")
    rest = Client(headers={"Authorization": f"Bearer {token}"})
    listed = rest.get("/api/channels")
    assert listed.status_code == 200, listed.content
    assert [channel["slug"] for channel in listed.json()] == ["demo"]


# --- Originals served safely (finding 4) ---------------------------------------------


@pytest.fixture
def html_original(demo):
    document = demo.documents.get()
    document.content_type = "text/html"
    document.original_filename = "trap.html"
    document.file.save(
        "trap.html",
        ContentFile(b'<meta http-equiv="refresh" content="0;url=https://evil">'),
        save=False,
    )
    document.save()
    return document


def assert_safe_download(response) -> None:
    assert response.status_code == 200
    assert not response["Content-Type"].startswith("text/html")
    assert response["Content-Type"] == "application/octet-stream"
    assert response["Content-Disposition"].startswith("attachment")
    assert response["Content-Security-Policy"] == "sandbox"
    assert response["X-Content-Type-Options"] == "nosniff"


def test_an_html_original_is_never_served_as_html_by_a_citation_link(
    demo, html_original
):
    """Issue 19, finding 4: a citation link to an HTML original answered
    text/html inline on Quire's origin. It is a sandboxed download now."""
    key = create_api_key(actor=COMMAND_LINE, name="agent", channels=[demo]).api_key
    url = citation_url(
        html_original, base_url="", caller=Caller(via="mcp", api_key=key)
    )
    assert_safe_download(Client().get(url))


def test_an_html_original_is_served_by_the_admin_by_the_same_rule(
    demo, html_original, admin_client
):
    """The admin serves the same file by the same rule."""
    response = admin_client.get(
        f"/admin/documents/document/{html_original.pk}/original/"
    )
    assert_safe_download(response)


def test_pdfs_images_and_text_are_shown_inline_sandboxed(demo, admin_client):
    """PDF, images and plain text (Markdown too) are inline, under their own
    type, still sandboxed; SVG is a download."""
    document = demo.documents.get()
    cases = {
        "application/pdf": ("application/pdf", True),
        "image/png": ("image/png", True),
        "text/plain": ("text/plain; charset=utf-8", True),
        "text/markdown": ("text/plain; charset=utf-8", True),
        "image/svg+xml": ("application/octet-stream", False),
        "application/xhtml+xml": ("application/octet-stream", False),
    }
    for stored, (served, inline) in cases.items():
        Document.objects.filter(pk=document.pk).update(content_type=stored)
        response = admin_client.get(
            f"/admin/documents/document/{document.pk}/original/"
        )
        assert response["Content-Type"] == served, stored
        assert response["Content-Disposition"].startswith(
            "inline" if inline else "attachment"
        ), stored
        assert response["Content-Security-Policy"] == "sandbox"


# --- Audit gaps outside sign-in (item 5) ---------------------------------------------


def test_create_channel_records_channel_create(db):
    """The service and the management command record channel.create (the
    command recorded nothing)."""
    create_channel(slug="made", name="Made", actor=COMMAND_LINE)
    call_command("create_channel", "typed", stdout=io.StringIO())
    events = AuditEvent.objects.filter(action=AuditEvent.Action.CHANNEL_CREATE)
    assert sorted(events.values_list("channel_slug", "via")) == [
        ("made", "command"),
        ("typed", "command"),
    ]


def test_the_admin_records_a_new_channel_as_created(admin_client):
    """A channel added in the admin is channel.create, not "changed"."""
    response = admin_client.post("/admin/documents/channel/add/", channel_form_data())
    assert response.status_code == 302
    actions = list(
        AuditEvent.objects.filter(channel_slug="handbook").values_list(
            "action", flat=True
        )
    )
    assert AuditEvent.Action.CHANNEL_CREATE in actions
    assert AuditEvent.Action.CHANNEL_CHANGE not in actions


def test_reader_and_curator_changes_say_who(admin_client, make_channel):
    """Adding and removing readers and curators is its own event, naming the
    people and the staff member who did it."""
    channel = make_channel("handbook", name="Handbook")
    alice = User.objects.create_user("alice")
    bob = User.objects.create_user("bob")
    channel.readers.add(bob)
    url = f"/admin/documents/channel/{channel.pk}/change/"
    response = admin_client.post(
        url, channel_form_data(readers=[alice.pk], curators=[bob.pk])
    )
    assert response.status_code == 302, response.content
    event = AuditEvent.objects.get(action=AuditEvent.Action.CHANNEL_ACCESS)
    assert event.channel == channel
    assert event.actor == "user admin"
    assert "Readers: added alice" in event.detail
    assert "Readers: removed bob" in event.detail
    assert "Curators: added bob" in event.detail


def test_key_events_carry_their_channels_so_curators_see_them(make_channel):
    """A key's create, change and revoke events name its channels; a curator
    of one of them sees them in the audit admin, a curator of another doesn't."""
    mine, theirs = make_channel("mine"), make_channel("theirs")
    key = create_api_key(actor=COMMAND_LINE, name="agent", channels=[mine]).api_key
    revoke_api_key(api_key=key, actor=COMMAND_LINE)
    create_api_key(actor=COMMAND_LINE, name="other", channels=[theirs])
    events = AuditEvent.objects.filter(action__startswith="key.", object_id=str(key.pk))
    assert {event.action for event in events} == {"key.create", "key.revoke"}
    assert all(list(event.channels.all()) == [mine] for event in events)
    assert {event.channel_slug for event in events} == {"mine"}
    curator = User.objects.create_user("cora", password="pw", is_staff=True)
    curator.user_permissions.add(Permission.objects.get(codename="view_auditevent"))
    mine.curators.add(curator)
    client = Client()
    client.force_login(curator)
    page = client.get("/admin/documents/auditevent/")
    assert page.status_code == 200
    shown = {event.pk for event in page.context["cl"].result_list}
    assert set(events.values_list("pk", flat=True)) <= shown
    other = AuditEvent.objects.get(action="key.create", object_repr__contains="other")
    assert other.pk not in shown


# --- Layering (item 6) -----------------------------------------------------------


def test_access_modules_import_at_module_level_only():
    """No function-level import in documents/access (the admission and tokens
    cycle was broken by one): what both need lives in a lower module."""
    offenders = []
    for path in sorted(ACCESS.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for inner in ast.walk(node):
                    if isinstance(inner, (ast.Import, ast.ImportFrom)):
                        offenders.append(f"{path.name}:{inner.lineno}")
    assert offenders == []
    tokens = ast.parse((ACCESS / "tokens.py").read_text(encoding="utf-8"))
    imported = {
        node.module for node in ast.walk(tokens) if isinstance(node, ast.ImportFrom)
    }
    assert "documents.access.admission" not in imported
