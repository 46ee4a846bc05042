"""Staff access per channel (issue 11): curators see their channels everywhere
and nothing of the others; model permissions still apply; secrets stay out of
cookies; the sign-in is throttled; deleting a channel deletes its files."""

import io
import re

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.test import Client
from django.urls import reverse
from PIL import Image

from documents.access import COMMAND_LINE
from documents.models import AuditEvent, Channel, Document, Feedback, Page
from documents.services.keys import create_api_key
from documents.tests.corpus import add_document
from documents.tests.test_admin import channel_form_data


def png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), "red").save(buffer, format="PNG")
    return buffer.getvalue()


def _channel(make_channel, slug: str) -> tuple[Channel, Document]:
    channel = make_channel(slug, name=f"{slug.title()} channel")
    document = add_document(
        channel, title=f"{slug.title()} memo", pages=[f"The {slug} text."]
    )
    Page.objects.get(document=document).image.save(
        "p1.png", ContentFile(png()), save=True
    )
    Feedback.objects.create(channel=channel, query=f"{slug}?", answer="a", score=3)
    create_api_key(actor=COMMAND_LINE, name=f"{slug} key", channels=[channel])
    return channel, document


@pytest.fixture
def two_channels(make_channel, fake_embedder):
    return _channel(make_channel, "public"), _channel(make_channel, "secret")


def staff_member(*codenames: str, curates: Channel | None = None) -> User:
    user = User.objects.create_user("alice", password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    if curates is not None:
        curators = Group.objects.create(name="curators of " + curates.slug)
        user.groups.add(curators)
        curates.curator_groups.add(curators)
    return user


EVERY_PERMISSION = [
    f"{verb}_{model}"
    for verb in ("view", "change", "add", "delete")
    for model in ("channel", "document", "feedback", "apikey", "auditevent")
]


def test_staff_outside_a_channel_see_it_nowhere(two_channels, client):
    """Item 1: a staff member who curates only `public` (through a group) gets
    nothing of `secret` in any list, page, preview, original, page image, the
    upload form, the feedback and audit lists, the key list or the playground,
    even with every model permission."""
    (public, public_doc), (secret, secret_doc) = two_channels
    client.force_login(staff_member(*EVERY_PERMISSION, curates=public))

    lists = {
        "admin:documents_channel_changelist": ("Public channel", "Secret channel"),
        "admin:documents_document_changelist": ("Public memo", "Secret memo"),
        "admin:documents_feedback_changelist": ("public?", "secret?"),
        "admin:documents_apikey_changelist": ("public key", "secret key"),
        "admin:documents_document_upload": ("Public channel", "Secret channel"),
    }
    for name, (shown, hidden) in lists.items():
        page = client.get(reverse(name)).content.decode()
        assert shown in page, name
        assert hidden not in page, name

    def document_url(view: str, *args) -> str:
        return reverse(f"admin:documents_document_{view}", args=args)

    hidden_pages = [
        document_url("change", secret_doc.pk),
        document_url("metadata", secret_doc.pk),
        document_url("original", secret_doc.pk),
        document_url("page", secret_doc.pk, 1),
        document_url("page_image", secret_doc.pk, 1),
        reverse("admin:documents_channel_change", args=[secret.pk]),
        "/playground/secret/",
    ]
    for url in hidden_pages:
        response = client.get(url)
        assert response.status_code in (302, 404), url
        assert b"The secret text" not in response.content, url
    assert client.post("/playground/secret/", {"tool": "list_documents"}).status_code
    assert (
        b"Secret memo"
        not in client.post("/playground/secret/", {"tool": "list_documents"}).content
    )
    assert "secret" not in client.get("/playground/").content.decode()
    # The admin's own actions can't reach it either.
    client.post(
        reverse("admin:documents_document_changelist"),
        {"action": "delete_selected", "_selected_action": [secret_doc.pk], "post": "1"},
    )
    assert Document.objects.filter(pk=secret_doc.pk).exists()

    for url in (
        document_url("change", public_doc.pk),
        document_url("page", public_doc.pk, 1),
        document_url("page_image", public_doc.pk, 1),
        "/playground/public/",
    ):
        assert client.get(url).status_code == 200, url


def test_superusers_see_every_channel(two_channels, admin_client):
    page = admin_client.get(reverse("admin:documents_document_changelist"))
    assert b"Public memo" in page.content and b"Secret memo" in page.content


def test_staff_views_need_the_admins_model_permissions(two_channels, client):
    """The playground needs view_document, as the admin's page preview does; a
    curator without it gets 403 in both."""
    (public, public_doc), _ = two_channels
    client.force_login(staff_member("view_channel", curates=public))
    assert client.get("/playground/public/").status_code == 403
    preview = reverse("admin:documents_document_page", args=[public_doc.pk, 1])
    assert client.get(preview).status_code == 403


def test_readers_use_the_playground_but_not_the_admin(two_channels, client):
    """A reader of a channel may run its tools in the playground; the admin's
    document pages stay for curators."""
    (public, public_doc), _ = two_channels
    user = staff_member("view_document")
    public.readers.add(user)
    client.force_login(user)
    response = client.post("/playground/public/", {"tool": "list_documents"})
    assert b"Public memo" in response.content
    preview = reverse("admin:documents_document_page", args=[public_doc.pk, 1])
    assert client.get(preview).status_code == 404


def test_the_playground_runs_tools_only_on_post(two_channels, admin_client):
    """Item 11: a link (GET) fills in the form but runs nothing, so another site
    can't make the server call a paid model; the POST needs the CSRF token."""
    response = admin_client.get(
        "/playground/public/", {"tool": "list_documents", "run": "1"}
    )
    assert response.status_code == 200
    assert "call" not in response.context
    csrf_client = Client(enforce_csrf_checks=True)
    csrf_client.force_login(User.objects.get(username="admin"))
    assert (
        csrf_client.post("/playground/public/", {"tool": "list_documents"}).status_code
        == 403
    )


def test_chat_endpoints_are_chosen_not_typed(admin_client, make_channel, settings):
    """Item 2: the channel form has no URL or variable-name field; the chat model
    is one of the endpoints the operator declared, and a channel can't name
    another one (so no form can send a secret to a URL of its choosing)."""
    channel = make_channel("handbook", name="Handbook")
    url = reverse("admin:documents_channel_change", args=[channel.pk])
    form = admin_client.get(url).context["adminform"].form
    assert "generator_base_url" not in form.fields
    assert "generator_api_key_env" not in form.fields
    # None declared: the form offers no chat model at all.
    assert "generator_endpoint" not in form.fields

    hostile = channel_form_data(
        generator_kind="chat",
        generator_model="m",
        generator_base_url="http://127.0.0.1:9911/v1",
        generator_api_key_env="DJANGO_SECRET_KEY",
    )
    admin_client.post(url, hostile)
    channel.refresh_from_db()
    assert channel.generator_kind == "extractive"

    settings.CHAT_MODEL_ENDPOINTS = {
        "local": {"base_url": "http://127.0.0.1:1/v1", "api_key_env": "", "models": []}
    }
    response = admin_client.post(url, hostile | {"generator_endpoint": "elsewhere"})
    assert "generator_endpoint" in response.context["adminform"].form.errors
    response = admin_client.post(url, hostile | {"generator_endpoint": "local"})
    assert response.status_code == 302
    channel.refresh_from_db()
    assert (channel.generator_kind, channel.generator_endpoint) == ("chat", "local")
    assert AuditEvent.objects.filter(action="channel.change").exists()


def test_a_new_key_is_shown_once_and_never_in_a_cookie(admin_client, make_channel):
    """Item 10: the key is shown on the page after saving, from the session,
    with no cookie carrying it; it is gone on the next page."""
    channel = make_channel("handbook")
    response = admin_client.post(
        reverse("admin:documents_apikey_add"),
        {"name": "agent", "channels": [channel.pk], "expires_at": ""},
    )
    assert response.status_code == 302
    assert "messages" not in response.cookies
    for morsel in response.cookies.values():
        assert "qk_" not in morsel.value
    shown = admin_client.get(response["Location"])
    # One key, shown with the configurations it is filled into.
    keys = re.findall(r"qk_[\w-]{20,}", shown.content.decode())
    assert len(set(keys)) == 1 and len(keys) >= 1
    assert "messages" not in shown.cookies
    again = admin_client.get(response["Location"])
    assert keys[0] not in again.content.decode()


def test_the_admin_sign_in_locks_out_after_repeated_failures(db, settings):
    """Item 11: after AXES_FAILURE_LIMIT wrong passwords for one user name from
    one address, even the right password is refused for a while."""
    User.objects.create_superuser("root", password="right-password")
    client = Client(REMOTE_ADDR="10.9.9.9")
    for _ in range(settings.AXES_FAILURE_LIMIT):
        client.post("/admin/login/", {"username": "root", "password": "wrong"})
    response = client.post(
        "/admin/login/", {"username": "root", "password": "right-password"}
    )
    assert response.status_code in (403, 429)
    assert "_auth_user_id" not in client.session
    elsewhere = Client(REMOTE_ADDR="10.8.8.8")
    elsewhere.post("/admin/login/", {"username": "root", "password": "right-password"})
    assert "_auth_user_id" in elsewhere.session


def test_deleting_a_channel_deletes_its_documents_files(
    two_channels, admin_client, django_capture_on_commit_callbacks
):
    """Item 11: deleting a channel removes its documents through the document
    service, stored originals and page images included; the other channel's
    files stay."""
    (public, public_doc), (secret, secret_doc) = two_channels
    names = [
        secret_doc.file.name,
        *Page.objects.filter(document=secret_doc).values_list("image", flat=True),
    ]
    kept = public_doc.file.name
    assert all(default_storage.exists(name) for name in names)
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            reverse("admin:documents_channel_delete", args=[secret.pk]), {"post": "yes"}
        )
    assert response.status_code == 302
    assert not Channel.objects.filter(pk=secret.pk).exists()
    assert not any(default_storage.exists(name) for name in names)
    assert default_storage.exists(kept)
    deleted = AuditEvent.objects.filter(action="channel.delete").get()
    assert deleted.channel_slug == "secret" and deleted.actor == "user admin"
