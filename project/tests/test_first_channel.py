"""README's "Your first channel", step by step, through the admin and the MCP
endpoint as a newcomer would take it."""

import json
import re
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from documents.models import Channel, Document
from documents.tests.test_admin import channel_form_data, run_worker

README = Path(settings.BASE_DIR) / "README.md"


def first_channel_section() -> str:
    text = README.read_text()
    return text[text.index("## Your first channel") : text.index("## What a channel")]


def test_the_readmes_first_channel_steps_work(
    admin_client, fake_embedder, django_capture_on_commit_callbacks, monkeypatch
):
    """Create a channel with two fields, upload a file with their values, create a
    read key, and the README's curl call lists the document with that key."""
    section = first_channel_section()

    # 1 and 2: the channel and its fields, newest first by published.
    data = channel_form_data(
        **{
            "newest_sort_0": "published",
            "newest_sort_1": "desc",
            "metadata_fields-TOTAL_FORMS": "2",
            "metadata_fields-0-position": "0",
            "metadata_fields-0-name": "kind",
            "metadata_fields-0-type": "string",
            "metadata_fields-0-filterable": "on",
            "metadata_fields-1-position": "1",
            "metadata_fields-1-name": "published",
            "metadata_fields-1-type": "date",
            "metadata_fields-1-filterable": "on",
        }
    )
    response = admin_client.post(reverse("admin:documents_channel_add"), data)
    assert response.status_code == 302
    channel = Channel.objects.get(slug="handbook")
    assert channel.mcp_path == "/mcp/handbook" and "`/mcp/handbook`" in section

    # 3: upload, then the worker makes it ready.
    upload_page = admin_client.get(reverse("admin:documents_document_upload"))
    assert "Next" in upload_page.text
    file = SimpleUploadedFile(
        "torque.md",
        b"# Torque\n\nTighten the self-locking nut to the stated torque.",
        content_type="text/markdown",
    )
    url = reverse("admin:documents_document_upload") + f"?channel={channel.pk}"
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            url,
            {"files": [file], "meta_kind": "guide", "meta_published": "2026-12-01"},
        )
    assert response.status_code == 302
    assert "Upload and queue for ingestion" in section
    run_worker(monkeypatch)
    document = Document.objects.get(channel=channel)
    assert document.status == Document.Status.READY

    # 4: a read key, shown once in the message after saving.
    response = admin_client.post(
        reverse("admin:documents_apikey_add"),
        {"name": "my agent", "channels": [channel.pk], "expires_at": ""},
        follow=True,
    )
    (key,) = set(re.findall(r"qk_[A-Za-z0-9_\-]{20,}", response.text))

    # 5: the README's curl call, headers and body as written there.
    body = re.search(r"-d '(\{.*?\})'", section, re.DOTALL).group(1)
    headers = dict(re.findall(r'-H "([^:]+): ([^"]+)"', section))
    assert headers.pop("Authorization") == "Bearer $KEY"
    response = admin_client.generic(
        "POST",
        channel.mcp_path,
        body,
        content_type=headers.pop("Content-Type"),
        headers={"Authorization": f"Bearer {key}", **headers},
    )
    assert response.status_code == 200
    listed = json.loads(response.json()["result"]["content"][0]["text"])
    assert [row["id"] for row in listed["results"]] == [document.pk]
    assert listed["results"][0]["kind"] == "guide"

    entry = json.loads(re.search(r"```json\n(.*?)```", section, re.DOTALL).group(1))
    (server,) = entry["mcpServers"].values()
    assert server["url"].endswith(channel.mcp_path)
