import json
import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import RequestFactory

from demo.loader import DEFINITION, DEMO_DIR, DEMO_KEY_NAME, load_demo
from documents.access import AccessDenied, admit
from documents.models import ApiKey, Channel, Document


def test_demo_files_are_small_listed_and_attributed():
    """Every demo file is in the channel definition and in ATTRIBUTION.md, every
    listed file exists, and together they stay under 3 MB."""
    definition = json.loads(DEFINITION.read_text())
    listed = {item["file"] for item in definition["documents"]}
    on_disk = {path.name for path in (DEMO_DIR / "documents").iterdir()}
    assert listed == on_disk
    attribution = (DEMO_DIR / "ATTRIBUTION.md").read_text()
    for name in listed:
        assert name in attribution
    total = sum(path.stat().st_size for path in (DEMO_DIR / "documents").iterdir())
    assert total < 3 * 1024 * 1024


def test_load_demo_makes_every_document_ready(db, fake_embedder, tmp_path, client):
    """The demo channel gets its fields, newest_sort and every document ready
    with pages and chunks; the printed login and key work."""
    site = load_demo(password_file=tmp_path / "demo-admin.txt")
    channel = Channel.objects.get(slug=site.channel.slug)
    assert channel.newest_sort == [{"field": "published", "direction": "desc"}]
    assert {f.name for f in channel.metadata_fields.all()} >= {
        "kind",
        "published",
        "topics",
    }
    definition = json.loads(DEFINITION.read_text())
    documents = Document.objects.filter(channel=channel)
    assert documents.count() == len(definition["documents"])
    for document in documents:
        assert document.status == Document.Status.READY, document.status_reason
        assert document.page_count >= 1 and document.chunk_count >= 1
    rule = documents.get(original_filename__startswith="faa-nprm")
    assert rule.metadata["published"] == "2020-08-06"
    assert rule.page_count == 15
    assert rule.pages.get(number=1).image

    # django-axes checks every sign-in against the request it comes with.
    assert client.login(
        request=RequestFactory().post("/admin/login/"),
        username=site.username,
        password=site.password,
    )
    assert client.get("/admin/").status_code == 200
    assert admit(channel.slug, site.raw_key, via="test").api_key.name == DEMO_KEY_NAME


def test_load_demo_is_idempotent_and_rotates_the_key(db, fake_embedder, tmp_path):
    """A second run adds no documents and keeps the password, but issues a new
    API key and revokes the previous one."""
    password_file = tmp_path / "demo-admin.txt"
    first = load_demo(password_file=password_file)
    ids = set(Document.objects.values_list("id", flat=True))
    second = load_demo(password_file=password_file)
    assert set(Document.objects.values_list("id", flat=True)) == ids
    assert second.password == first.password == password_file.read_text().strip()
    assert second.raw_key != first.raw_key
    with pytest.raises(AccessDenied):
        admit(second.channel.slug, first.raw_key, via="test")
    assert admit(second.channel.slug, second.raw_key, via="test").api_key
    assert ApiKey.objects.filter(revoked_at__isnull=True).count() == 1


def test_load_demo_command_prints_login_mcp_url_and_key(
    db, fake_embedder, settings, tmp_path
):
    """`manage.py load_demo` prints the admin URL and login, then one MCP URL line
    and one API key line."""
    settings.DATA_DIR = Path(tmp_path)
    out = StringIO()
    call_command("load_demo", "--base-url", "http://127.0.0.1:8123", stdout=out)
    lines = out.getvalue().splitlines()
    password = (tmp_path / "demo-admin.txt").read_text().strip()
    assert "Admin: http://127.0.0.1:8123/admin/" in lines
    assert f"Login: admin / {password}" in lines
    mcp_lines = [line for line in lines if line.startswith("MCP URL: ")]
    assert mcp_lines == ["MCP URL: http://127.0.0.1:8123/mcp/demo"]
    key_lines = [line for line in lines if line.startswith("API key: ")]
    assert len(key_lines) == 1
    raw_key = key_lines[0].removeprefix("API key: ")
    assert re.fullmatch(r"qk_[\w-]+", raw_key)
    assert admit("demo", raw_key, via="test").api_key
