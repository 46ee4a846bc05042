"""Browser tests: Debian's Chromium driven by Playwright against a live uvicorn
server on the test database.

The browser is /usr/bin/chromium (`.ci/run` installs it from Debian); Playwright
never downloads one. The server's data (a channel with three of the demo
documents, ingested for real, and a staff login) is committed, so the server's
own connections see it; it is deleted when the session ends. A failing test
leaves a screenshot in test-artifacts/.
"""

import secrets
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from documents.access import COMMAND_LINE

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
]
REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO / "test-artifacts"
SLUG = "playground-browser"
CHANNEL_NAME = "Demo documents (browser test)"
STAFF_USERNAME = "playground-staff"
DOCUMENTS = [
    "faa-amt-handbook-self-locking-nuts.pdf",
    "quire-metadata-filters.md",
    "quire-faq.txt",
]


@dataclass
class Site:
    base_url: str
    slug: str
    channel_name: str
    username: str
    password: str
    document_ids: dict[str, int]  # file name -> id
    # The server's environment (database, media folder), for a worker beside it.
    env: dict[str, str] = field(default_factory=dict)


def _create_data(password: str) -> dict[str, int]:
    """The channel (the demo's fields), three demo documents ingested
    synchronously with the real embedder, and a superuser."""
    import json

    from django.contrib.auth import get_user_model
    from django.core.files import File

    from demo.loader import DEFINITION
    from documents.services.channels import create_channel
    from documents.services.documents import create_document
    from documents.services.ingestion import ingest_document

    spec = json.loads(DEFINITION.read_text(encoding="utf-8"))
    channel = create_channel(
        slug=SLUG,
        name=CHANNEL_NAME,
        fields=spec["fields"],
        newest_sort=spec["newest_sort"],
    )
    by_file = {item["file"]: item for item in spec["documents"]}
    ids = {}
    for name in DOCUMENTS:
        item = by_file[name]
        with open(DEFINITION.parent / "documents" / name, "rb") as handle:
            document = create_document(
                actor=COMMAND_LINE,
                channel=channel,
                file=File(handle, name=name),
                title=item["title"],
                metadata=item["metadata"],
                enqueue=False,
            )
        document = ingest_document(document_id=document.pk)
        assert document.status == "ready", document.status_reason
        ids[name] = document.pk
    get_user_model().objects.create_superuser(
        STAFF_USERNAME, "staff@example.org", password
    )
    return ids


def _delete_data() -> None:
    from django.contrib.auth import get_user_model

    from documents.models import Channel

    Channel.objects.filter(slug=SLUG).delete()
    get_user_model().objects.filter(username=STAFF_USERNAME).delete()


@pytest.fixture(scope="session")
def site(django_db_setup, django_db_blocker, tmp_path_factory):
    """A uvicorn server on the test database with the channel and staff user."""
    from django.db import connection
    from django.test import override_settings

    from mcp_endpoint.tests import live

    if not CHROMIUM.exists():
        pytest.fail("/usr/bin/chromium is missing: apt-get install -y chromium")
    assert connection.settings_dict["NAME"].startswith("test_"), "no test database"
    media = tmp_path_factory.mktemp("browser-media")
    storages = live.media_storages(media)
    password = secrets.token_urlsafe(16)
    with (
        django_db_blocker.unblock(),
        override_settings(MEDIA_ROOT=media, STORAGES=storages),
    ):
        _delete_data()
        ids = _create_data(password)
    env = live.server_environment(media, live.new_conformance_key())
    process, base_url = live.start_server(env, workers=1)
    try:
        yield Site(base_url, SLUG, CHANNEL_NAME, STAFF_USERNAME, password, ids, env=env)
    finally:
        live.stop_server(process)
        with django_db_blocker.unblock():
            _delete_data()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture
def browser(site):
    """Chromium for one test. Function-scoped: Playwright's event loop must not
    be running while pytest-django opens and rolls back the test transaction."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
        )
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(browser, site, request):
    """A fresh page (1400x1000) that records CSP violations and console errors;
    a screenshot is saved to test-artifacts/ when the test fails."""
    context = browser.new_context(
        base_url=site.base_url, viewport={"width": 1400, "height": 1000}
    )
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.console_errors = []
    page.on(
        "console",
        lambda message: (
            page.console_errors.append(message.text)
            if message.type == "error"
            else None
        ),
    )
    yield page
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=ARTIFACTS / f"{request.node.name}.png", full_page=True)
    context.close()
