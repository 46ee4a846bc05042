"""README's "Your first channel", followed literally in Chromium: the five steps
through the admin as written, an ingestion worker beside the server as under
`make run`, and the key from step 4 getting a `rag_search` answer that quotes
the uploaded file."""

import json
import re
import signal
import subprocess
import sys

import httpx
import pytest

from mcp_endpoint.tests import live
from tests_browser.test_admin_browser import sign_in

# django_db: the session needs the test database (the server reads it).
pytestmark = [pytest.mark.slow, pytest.mark.django_db]

SLUG = "handbook"
HANDBOOK = (
    "# Leave\n\n"
    "Unused leave expires at the end of March unless your manager agrees otherwise.\n\n"
    "# Travel\n\n"
    "Book trains for trips under five hours.\n"
)


def first_channel_section() -> str:
    text = (live.REPO / "README.md").read_text()
    return text[text.index("## Your first channel") : text.index("## What a channel")]


@pytest.fixture
def worker(site):
    """`manage.py ingest_worker` on the server's database and media, as
    `make run` starts one."""
    process = subprocess.Popen(
        [sys.executable, "manage.py", "ingest_worker", "--no-startup-delay"],
        cwd=live.REPO,
        env={**site.env, "INGEST_WORKER_NICENESS": "0"},
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        yield process
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def handbook_removed(site, django_db_blocker):
    """The channel the steps create (committed by the live server) goes again.
    Requested before `page`, so it runs once Playwright's loop has stopped."""
    from documents.models import ApiKey, Channel

    yield
    with django_db_blocker.unblock():
        ApiKey.objects.filter(name="First channel (browser)").delete()
        Channel.objects.filter(slug=SLUG).delete()


def test_the_readmes_first_channel_ends_with_an_answer(
    handbook_removed, page, site, worker, tmp_path
):
    """Steps 1-5 of the README as a newcomer clicks them; the answer to a
    question about the uploaded file quotes it and cites it."""
    section = first_channel_section()
    page.set_viewport_size({"width": 1280, "height": 900})
    sign_in(page, site)

    # 1. Channels → Add channel: a name; the slug fills itself in.
    assert "**Channels → Add channel**" in section
    page.goto("/admin/documents/channel/")
    page.get_by_role("link", name="Add channel").click()
    page.fill("#id_name", "Handbook")
    page.locator("#id_name").blur()
    assert page.locator("#id_slug").input_value() == SLUG

    # 2. Metadata fields right below: kind (string, filterable) and published
    # (date, filterable); save and continue, pick published as newest first, save.
    assert "**Add\nanother metadata field**" in section
    for index, (name, kind) in enumerate([("kind", "string"), ("published", "date")]):
        page.get_by_text("Add another metadata field").click()
        row = page.locator("#metadata_fields-group tr.form-row:not(.empty-form)").nth(
            index
        )
        row.locator("input[name$='-name']").fill(name)
        row.locator("select[name$='-type']").select_option(kind)
        row.locator("input[name$='-filterable']").check()
    page.click("input[name=_continue]")
    page.wait_for_url("**/admin/documents/channel/*/change/")
    page.select_option("#id_newest_sort_0", "published")
    page.click("input[name=_save]")
    # Saving returns to the list; the channel's own page then says what comes next.
    page.wait_for_url("**/admin/documents/channel/")
    page.goto("/admin/documents/channel/")
    page.get_by_role("link", name="Handbook", exact=True).click()
    page.wait_for_url("**/admin/documents/channel/*/change/")
    page.locator(".quire-next-steps").wait_for()
    steps = page.locator(".quire-next-steps a").all_inner_texts()
    assert "Upload documents" in steps and "Create an API key" in steps

    # 3. Documents → Upload documents: the channel, Next, a file and its fields.
    assert "**Upload and queue for ingestion**" in section
    handbook = tmp_path / "handbook.md"
    handbook.write_text(HANDBOOK)
    page.goto("/admin/documents/document/upload/")
    (choice,) = [
        text
        for text in page.locator("#id_channel option").all_inner_texts()
        if text.startswith("Handbook")
    ]
    page.select_option("#id_channel", label=choice)
    page.click("input[value=Next]")
    page.set_input_files("input[type=file]", str(handbook))
    page.fill("input[name=meta_kind]", "guide")
    page.fill("input[name=meta_published]", "2026-11-30")
    page.click("input[value='Upload and queue for ingestion']")
    page.wait_for_url("**/admin/documents/document/**")
    # The list refreshes itself until the worker has read the file.
    page.locator("td.field-status_badge", has_text="ready").wait_for(timeout=300_000)

    # 4. API keys → Add API key: a name, the channel, write access off.
    page.goto("/admin/documents/apikey/add/")
    page.fill("#id_name", "First channel (browser)")
    channels = page.locator("#id_channels")
    if channels.evaluate("node => node.tagName") == "SELECT":
        channels.select_option(label="Handbook")
    else:
        page.get_by_label("Handbook", exact=True).check()
    assert not page.locator("#id_write").is_checked()
    page.click("input[name=_save]")
    key = page.inner_text("#quire-new-key").strip()
    assert key.startswith("qk_")
    shown = page.inner_text(".quire-new-key-panel")
    assert f"/mcp/{SLUG}" in shown and key in shown

    # 5. The README's curl headers, then the question an agent would ask.
    headers = dict(re.findall(r'-H "([^:]+): ([^"]+)"', section))
    headers["Authorization"] = headers["Authorization"].replace("$KEY", key)
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "rag_search",
            "arguments": {"query": "When does unused leave expire?"},
        },
    }
    response = httpx.post(
        f"{site.base_url}/mcp/{SLUG}", headers=headers, json=body, timeout=120
    )
    assert response.status_code == 200, response.text
    if response.headers["content-type"].startswith("text/event-stream"):
        data = [
            json.loads(line[len("data: ") :])
            for line in response.text.splitlines()
            if line.startswith("data: ")
        ]
        message = next(item for item in data if item.get("id") == 1)
    else:
        message = response.json()
    result = message["result"]
    assert not result.get("isError"), result
    answer = result["structuredContent"]["answer"]
    assert "Unused leave expires at the end of March" in answer
    cited = {c["document_id"] for c in result["structuredContent"]["citations"]}
    assert len(cited) == 1
