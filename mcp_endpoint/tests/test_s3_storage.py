"""STORAGE_BACKEND=s3 for real: django-storages' S3Storage against moto's S3
server on 127.0.0.1 (boto3 over HTTP). Upload and ingestion store the original
and the page images in the bucket, citation links redirect to presigned URLs
that serve those bytes, and deleting a document removes its objects."""

import urllib.request
import uuid
from urllib.parse import urlsplit

import boto3
import pytest
from asgiref.sync import async_to_sync
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile

from documents.access import COMMAND_LINE, Caller
from documents.models import ApiKey, Page
from documents.services.documents import create_document, delete_document
from documents.services.ingestion import ingest_document
from documents.tests.fixtures import make_pdf
from documents.tests.sources.servers import RecordingMotoServer, free_port
from mcp_endpoint.citations import citation_page_url

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def moto_endpoint():
    port = free_port()
    server = RecordingMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture
def bucket(moto_endpoint, settings, monkeypatch):
    """A fresh bucket as the default storage, configured as settings.py
    configures STORAGE_BACKEND=s3."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    name = f"media-{uuid.uuid4().hex[:12]}"
    client = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    client.create_bucket(Bucket=name)
    settings.PAGE_IMAGE_WIDTH = 120
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": name,
                "endpoint_url": moto_endpoint,
                "querystring_auth": True,
                "querystring_expire": settings.CITATION_URL_MAX_AGE,
                "file_overwrite": False,
            },
        },
    }
    return name, client


def keys(client, name: str) -> set[str]:
    listed = client.list_objects_v2(Bucket=name)
    return {item["Key"] for item in listed.get("Contents", [])}


def fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read()


def test_upload_ingest_cite_and_delete_through_an_s3_bucket(
    bucket, handbook, handbook_key, mcp, django_capture_on_commit_callbacks
):
    name, client = bucket
    assert default_storage.__class__.__name__ == "S3Storage"
    original = make_pdf(["Valves are inspected every month.", "Seals last a year."])
    document = create_document(
        channel=handbook,
        file=SimpleUploadedFile("valves.pdf", original, "application/pdf"),
        actor=COMMAND_LINE,
        metadata={"topic": "safety", "year": 2025},
        enqueue=False,
    )
    document = ingest_document(document_id=document.pk)
    assert document.status == "ready", document.status_reason
    images = [p.image.name for p in Page.objects.filter(document=document)]
    assert all(images) and len(images) == 2
    stored = keys(client, name)
    assert document.file.name in stored and set(images) <= stored

    caller = Caller(via="mcp", api_key=ApiKey.objects.get(name="handbook agent"))
    page_url = citation_page_url(document, base_url="", page=1, caller=caller)
    token = page_url.split("/")[2]

    def get(path: str):
        return async_to_sync(mcp.client.get)(path)

    answer = get(f"/citations/{token}")
    assert answer.status_code == 302
    presigned = answer["Location"]
    assert urlsplit(presigned).netloc == urlsplit(client.meta.endpoint_url).netloc
    assert "Signature" in presigned or "X-Amz-Signature" in presigned
    assert fetch(presigned) == original

    image = get(f"/citations/{token}/image")
    assert image.status_code == 302
    assert fetch(image["Location"]).startswith(b"\x89PNG")
    assert get(f"/citations/{token}/page").status_code == 200

    with django_capture_on_commit_callbacks(execute=True):
        delete_document(document=document, actor=COMMAND_LINE)
    remaining = keys(client, name)
    assert document.file.name not in remaining
    assert not set(images) & remaining
