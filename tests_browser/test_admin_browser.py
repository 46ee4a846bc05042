"""The admin in Chromium at 1280 and 1440 px: every page Quire adds or changes
fits the window (no horizontal scrolling, the page's nor a table's), loads
without a failed request (a favicon 404, say) or a CSP violation, and is saved
as a screenshot in test-artifacts/admin/ (two of them are in docs/, shown by
docs/admin.md). The channel form's field choices follow the field rows as they
are typed."""

from dataclasses import dataclass
from datetime import timedelta

import pytest

from tests_browser.conftest import ARTIFACTS

# django_db: the session needs the test database (the server reads it).
pytestmark = [pytest.mark.slow, pytest.mark.django_db]

SCREENSHOTS = ARTIFACTS / "admin"
WIDTHS = [1280, 1440]
NEW_CHANNEL = "browser-widgets"
FAILED_FILE = "maintenance-manual-chapter-32-landing-gear-scan.pdf"
# Titled by its file name without the extension (it has no text to take one from).
FAILED_TITLE = "maintenance-manual-chapter-32-landing-gear-scan"
KEY_NAMES = [
    "Claude Desktop on the operations laptop",
    "Uploader (CI)",
    "Old notebook",
    "Contractor, spring audit",
]
# What the page and any scrolling box inside it would scroll sideways.
OVERFLOW = """() => {
    const boxes = [...document.querySelectorAll("*")].filter((element) => {
        const overflow = getComputedStyle(element).overflowX;
        return (overflow === "auto" || overflow === "scroll")
            && element.scrollWidth > element.clientWidth + 1;
    });
    return {
        page: document.scrollingElement.scrollWidth,
        window: innerWidth,
        boxes: boxes.map((box) =>
            `${box.id || box.className || box.tagName}: ${box.scrollWidth} > `
            + `${box.clientWidth}`),
    };
}"""


@dataclass
class AdminData:
    channel_id: int
    handbook_id: int
    failed_id: int
    source_id: int
    sync_id: int


@pytest.fixture(scope="module")
def admin_data(site, django_db_blocker, tmp_path_factory):
    """What a channel in use has besides ready documents: a document that
    failed (with its reason), one still pending, keys in each state, feedback
    and the audit trail they leave. Removed again afterwards."""
    from django.contrib.auth import get_user_model
    from django.core.files.base import ContentFile
    from django.test import override_settings
    from django.utils import timezone
    from oauth2_provider.models import get_application_model

    from documents.access import COMMAND_LINE
    from documents.models import (
        ApiKey,
        AuditEvent,
        Channel,
        Document,
        Feedback,
        Source,
        SourceSync,
    )
    from documents.services.documents import create_document
    from documents.services.feedback import submit_feedback
    from documents.services.grants import record_sign_in_grant
    from documents.services.ingestion import ingest_document
    from documents.services.keys import create_api_key, revoke_api_key
    from mcp_endpoint.tests import live

    media = tmp_path_factory.mktemp("admin-media")
    storages = live.media_storages(media)
    metadata = {"kind": "handbook", "publisher": "Federal Aviation Administration"}
    with (
        django_db_blocker.unblock(),
        override_settings(MEDIA_ROOT=media, STORAGES=storages),
    ):
        started = timezone.now()
        channel = Channel.objects.get(slug=site.slug)
        failed = create_document(
            actor=COMMAND_LINE,
            channel=channel,
            # Cut short: "The PDF is truncated: the file ends early (...)".
            file=ContentFile(b"%PDF-1.7\n garbage", name=FAILED_FILE),
            metadata=metadata,
            enqueue=False,
        )
        failed = ingest_document(document_id=failed.pk)
        assert failed.status == Document.Status.FAILED
        pending = create_document(
            actor=COMMAND_LINE,
            channel=channel,
            file=ContentFile(b"# Release notes\n\nWhat changed.", name="notes.md"),
            metadata=metadata,
            enqueue=False,
        )
        keys = [
            create_api_key(actor=COMMAND_LINE, name=KEY_NAMES[0], channels=[channel]),
            create_api_key(
                actor=COMMAND_LINE,
                name=KEY_NAMES[1],
                channels=[channel],
                scopes=["read", "write"],
            ),
            create_api_key(actor=COMMAND_LINE, name=KEY_NAMES[2], channels=[channel]),
            create_api_key(
                actor=COMMAND_LINE,
                name=KEY_NAMES[3],
                channels=[channel],
                expires_at=timezone.now() - timedelta(days=3),
            ),
        ]
        revoke_api_key(actor=COMMAND_LINE, api_key=keys[2].api_key)
        application = get_application_model().objects.create(
            name="Claude (custom connector)",
            client_type="public",
            authorization_grant_type="authorization-code",
            redirect_uris="https://claude.ai/api/mcp/auth_callback",
        )
        record_sign_in_grant(
            user=get_user_model().objects.get(username=site.username),
            application=application,
            channel=channel,
            resource=f"{site.base_url}/mcp/{site.slug}",
            scopes=["read"],
        )
        for score, query, comment in [
            (
                5,
                "What is a self-locking nut used for, and when may it be reused?",
                "Exactly the page I needed, and the citation opened it.",
            ),
            (
                2,
                "Which torque values apply to fiber-insert nuts on control rods?",
                "It quoted the general section; the answer is in the table on "
                "the next page, which it never cited.",
            ),
            (4, "How do I filter documents by publication date?", ""),
        ]:
            submit_feedback(
                channel=channel,
                api_key=keys[0].api_key,
                query=query,
                answer="Self-locking nuts are used where ... [Document 1, Page 1]",
                score=score,
                comment=comment,
            )
        # A scheduled source with a sync running, whose failed entries have
        # long keys; the failed document came from it.
        source = Source.objects.create(
            channel=channel,
            name="Maintenance manuals",
            kind="folder",
            config={"path": "/srv/quire/maintenance/manuals/aircraft/2026"},
            metadata_map={"kind": "path:0"},
            every_minutes=60,
            next_sync_at=timezone.now() + timedelta(hours=1),
        )
        sync = SourceSync.objects.create(
            source=source,
            trigger=SourceSync.Trigger.ADMIN,
            actor="playground-staff (admin)",
            status=SourceSync.Status.SYNCING,
            started_at=timezone.now(),
            listed=1200,
            processed=480,
            added=470,
            failed=10,
            errors=[
                {
                    "key": "engines/turbofan/overhaul/" * 4 + f"manual-{n}.pdf",
                    "reason": "The PDF is truncated: the file ends early.",
                }
                for n in range(10)
            ],
        )
        Document.objects.filter(pk=failed.pk).update(
            source=source,
            source_key="engines/turbofan/overhaul/" * 4 + FAILED_FILE,
            source_url="https://manuals.example.org/engines/turbofan/overhaul/"
            + "section/" * 8,
            source_sync=sync,
        )
    yield AdminData(
        channel.pk,
        site.document_ids["faa-amt-handbook-self-locking-nuts.pdf"],
        failed.pk,
        source.pk,
        sync.pk,
    )
    with django_db_blocker.unblock():
        Document.objects.filter(pk__in=[failed.pk, pending.pk]).delete()
        source.delete()  # and its syncs
        Channel.objects.filter(slug=NEW_CHANNEL).delete()
        Feedback.objects.filter(channel=channel, created_at__gte=started).delete()
        ApiKey.objects.filter(pk__in=[key.api_key.pk for key in keys]).delete()
        application.delete()  # and its sign-in grant
        AuditEvent.objects.filter(at__gte=started).delete()


def admin_pages(data: AdminData) -> dict[str, str]:
    document = f"/admin/documents/document/{data.handbook_id}"
    return {
        "index": "/admin/",
        "channels": "/admin/documents/channel/",
        "channel": f"/admin/documents/channel/{data.channel_id}/change/",
        "channel-add": "/admin/documents/channel/add/",
        "documents": "/admin/documents/document/",
        "document": f"{document}/change/",
        "document-failed": f"/admin/documents/document/{data.failed_id}/change/",
        "metadata": f"{document}/metadata/",
        "page-preview": f"{document}/pages/1/",
        "upload": "/admin/documents/document/upload/",
        "upload-files": f"/admin/documents/document/upload/?channel={data.channel_id}",
        "sources": "/admin/documents/source/",
        "source": f"/admin/documents/source/{data.source_id}/change/",
        "source-add": "/admin/documents/source/add/",
        "source-syncs": "/admin/documents/sourcesync/",
        "source-sync": f"/admin/documents/sourcesync/{data.sync_id}/change/",
        "api-keys": "/admin/documents/apikey/",
        "api-key-add": "/admin/documents/apikey/add/",
        "sign-in-grants": "/admin/documents/signingrant/",
        "feedback": "/admin/documents/feedback/",
        "audit-events": "/admin/documents/auditevent/",
        "landing-page": "/",
    }


def sign_in(page, site) -> None:
    page.goto("/admin/login/?next=/admin/")
    page.fill("#id_username", site.username)
    page.fill("#id_password", site.password)
    page.click("input[type=submit]")
    page.wait_for_url("**/admin/")


@pytest.mark.parametrize("width", WIDTHS)
def test_every_admin_page_fits_the_window(browser, site, admin_data, width):
    """At 1280 and 1440 px nothing scrolls sideways on any admin page Quire
    adds or changes; no request fails and nothing breaks the CSP."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(
        base_url=site.base_url, viewport={"width": width, "height": 900}
    )
    failures: list[str] = []
    console: list[str] = []
    try:
        page = context.new_page()
        page.on(
            "response",
            lambda response: (
                failures.append(f"{response.status} {response.url}")
                if response.status >= 400
                else None
            ),
        )
        page.on(
            "console",
            lambda message: (
                console.append(message.text) if message.type == "error" else None
            ),
        )
        sign_in(page, site)
        overflowing = {}
        for name, path in admin_pages(admin_data).items():
            page.goto(path)
            page.wait_for_load_state("load")
            assert "Server Error" not in page.title(), path
            fit = page.evaluate(OVERFLOW)
            if fit["page"] > fit["window"] or fit["boxes"]:
                overflowing[name] = fit
            page.screenshot(path=SCREENSHOTS / f"{name}-{width}.png", full_page=True)
    finally:
        context.close()
    assert overflowing == {}
    assert failures == []
    assert console == []


def test_lists_show_state_reasons_and_sizes(page, site, admin_data):
    """The lists show what a curator looks for: the key list's State column in
    view, a failed document's short reason (the whole one on its page), sizes
    in KB, and the header's links to each list."""
    page.set_viewport_size({"width": 1280, "height": 900})
    sign_in(page, site)
    page.goto("/admin/documents/apikey/")
    state = page.locator("#result_list th.column-state_badge")
    assert state.is_visible() and state.bounding_box()["x"] + 40 < 1280
    badges = page.locator("#result_list td.field-state_badge").all_inner_texts()
    assert {"active", "revoked", "expired"} <= set(badges)
    page.goto("/admin/documents/document/")
    row = page.locator("#result_list tr", has_text=FAILED_TITLE)
    reason = row.locator("td.field-reason span").get_attribute("title")
    assert reason.startswith("The PDF is truncated")
    assert row.locator("td.field-reason").inner_text().endswith("…")
    assert row.locator("td.field-status_badge").inner_text() == "Failed"
    sizes = page.locator("#result_list td.field-size_display").all_inner_texts()
    assert any(size.endswith(" KB") for size in sizes)
    row.locator("a", has_text=FAILED_TITLE).first.click()
    assert reason in page.inner_text("#content-main")
    assert "Text found" not in page.inner_text("#content-main")
    nav = page.locator(".quire-nav a").all_inner_texts()
    assert nav[:3] == ["Channels", "Documents", "API keys"]
    assert "Playground" in nav


def test_document_actions_sit_on_one_row(page, site, admin_data):
    """The document page's actions (edit, replace file, re-ingest, preview,
    history) line up on one row, the Re-ingest button as tall as the links
    beside it."""
    page.set_viewport_size({"width": 1280, "height": 900})
    sign_in(page, site)
    page.goto(f"/admin/documents/document/{admin_data.handbook_id}/change/")
    tools = page.locator(".object-tools li > *")
    boxes = [tools.nth(index).bounding_box() for index in range(tools.count())]
    assert len(boxes) == 5
    assert "REPLACE FILE" in tools.all_inner_texts()  # CSS upper-cases them
    assert len({round(box["y"]) for box in boxes}) == 1
    assert len({round(box["height"]) for box in boxes}) == 1


def test_channel_form_offers_the_fields_being_typed(page, site, admin_data):
    """On a new channel, fields typed into the metadata rows show up at once as
    choices of "Newest first by" (every field) and "Filters offered to MCP
    clients" (filterable ones); the channel saves with what was chosen."""
    page.set_viewport_size({"width": 1440, "height": 900})
    sign_in(page, site)
    page.goto("/admin/documents/channel/add/")
    page.fill("#id_name", "Browser widgets")
    page.fill("#id_slug", NEW_CHANNEL)
    for index, (name, kind, filterable) in enumerate(
        [("year", "number", True), ("team", "string", False)]
    ):
        page.click(".inline-group .add-row a")
        row = page.locator("#metadata_fields-group tr.form-row:not(.empty-form)").nth(
            index
        )
        row.locator("input[name$='-name']").fill(name)
        row.locator("select[name$='-type']").select_option(kind)
        if filterable:
            row.locator("input[name$='-filterable']").check()
    options = page.locator("#id_newest_sort_0 option").all_inner_texts()
    assert options == ["—", "year", "team"]
    filters = page.locator("div[data-quire-field-choice=filterable] input")
    assert [filters.nth(i).get_attribute("value") for i in range(filters.count())] == [
        "year"
    ]
    page.select_option("#id_newest_sort_0", "year")
    page.check("div[data-quire-field-choice=filterable] input[value=year]")
    page.click("input[name=_save]")
    # A new channel opens on its own page, saying what comes next.
    page.wait_for_url("**/admin/documents/channel/*/change/")
    steps = page.locator(".quire-next-steps a")
    assert steps.all_inner_texts() == [
        "Upload documents",
        "Add a source",
        "Create an API key",
        "Open the playground",
    ]
    assert "You may edit it again below" not in page.inner_text("body")
    page.screenshot(path=SCREENSHOTS / "channel-created-1440.png", full_page=True)
    # Saved as the JSON the model keeps: the form shows it back.
    assert page.locator("#id_newest_sort_0").input_value() == "year"
    assert page.locator("#id_newest_sort_1").input_value() == "desc"
    assert page.locator("#id_newest_sort_2").input_value() == ""
    ticked = page.locator("div[data-quire-field-choice=filterable] input:checked")
    assert [ticked.nth(i).get_attribute("value") for i in range(ticked.count())] == [
        "year"
    ]
    # Each next step's link opens its page, ready for this channel.
    steps.first.click()
    page.wait_for_load_state("load")
    assert "Upload documents to Browser widgets" in page.inner_text("h1")


def test_the_admin_speaks_quire_not_its_frameworks(page, site, admin_data):
    """The index has no section of a third-party app (OAuth toolkit, axes,
    tasks), only Quire's lists, users and locked-out sign-ins; a document page
    shows its metadata as labelled fields, never raw JSON."""
    page.set_viewport_size({"width": 1280, "height": 900})
    sign_in(page, site)
    page.goto("/admin/")
    sections = page.locator("#content-main .module caption").all_inner_texts()
    assert [section.strip().lower() for section in sections] == [
        "quire",
        "users and sign-ins",
    ]
    index = page.inner_text("#content-main")
    for internal in ("Access tokens", "Refresh tokens", "Applications", "Tasks"):
        assert internal not in index, internal
    assert "Locked-out sign-ins" in index
    page.goto(f"/admin/documents/document/{admin_data.handbook_id}/change/")
    content = page.inner_text("#content-main")
    assert "{" not in content and '":' not in content
    assert "<time" not in content  # every value rendered, none shown as markup
    assert page.locator(".quire-fields dt").count() >= 1
    assert page.locator("h1").inner_text().startswith("Document: ")


def test_the_source_form_shows_the_fields_of_the_kind_picked(page, site, admin_data):
    """A new source's form shows the S3 store only for an S3 bucket and the
    page budget only for a website, as the kind is picked."""
    sign_in(page, site)
    page.goto("/admin/documents/source/add/")
    store, max_pages = ".form-row.field-store", ".form-row.field-max_pages"
    page.select_option("#id_kind", "folder")
    assert not page.is_visible(store) and not page.is_visible(max_pages)
    page.select_option("#id_kind", "s3")
    assert page.is_visible(store) and not page.is_visible(max_pages)
    page.select_option("#id_kind", "web")
    assert not page.is_visible(store) and page.is_visible(max_pages)
