"""Citation links of a document that was given a new file: a link keeps
opening the revision it was made for, and its page says a newer one exists."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from documents.access import COMMAND_LINE, Caller
from documents.models import Document
from documents.services.documents import create_document
from documents.services.ingestion import ingest_document
from documents.services.keys import create_api_key
from documents.services.revisions import replace_document_file
from documents.tests.fixtures import make_pdf
from mcp_endpoint.citations import citation_page_url, citation_url

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _small_images(settings):
    settings.PAGE_IMAGE_WIDTH = 120


def _pdf(name: str, *pages: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, make_pdf(list(pages)), "application/pdf")


@pytest.fixture
def manual(make_channel, fake_embedder):
    channel = make_channel("manuals")
    document = create_document(
        actor=COMMAND_LINE,
        channel=channel,
        file=_pdf("manual.pdf", "Torque the bolts to forty newton metres."),
        enqueue=False,
    )
    return ingest_document(document_id=document.pk)


@pytest.fixture
def key(manual):
    return create_api_key(actor=COMMAND_LINE, name="agent", channels=[manual.channel])


def _path(url: str) -> str:
    return url.removeprefix("http://testserver").split("#")[0]


def _revise(document: Document, *pages: str) -> Document:
    replace_document_file(
        document=document, file=_pdf("manual-v2.pdf", *pages), actor=COMMAND_LINE
    )
    return ingest_document(document_id=document.pk)


def test_an_older_revisions_link_opens_that_revision(manual, key):
    """A page link made before the new file still shows the old page, its
    image and its original, and says that revision 2 exists; a link made now
    shows revision 2 without the note."""
    old_page = citation_page_url(
        manual,
        base_url="",
        page=1,
        span=(0, 5),
        caller=Caller(via="mcp", api_key=key.api_key),
    )
    old_original = citation_url(
        manual, base_url="", caller=Caller(via="mcp", api_key=key.api_key)
    )
    old_bytes = manual.file.open("rb").read()
    document = _revise(manual, "Torque the bolts to fifty newton metres.")
    client = Client()

    response = client.get(_path(old_page))
    assert response.status_code == 200
    text = response.content.decode()
    assert "forty newton" in text and "fifty" not in text
    assert "A newer revision (2) exists" in text
    image = client.get(_path(old_page).removesuffix("/page") + "/image")
    assert image.status_code == 200 and image["Content-Type"] == "image/png"
    assert b"".join(client.get(_path(old_original)).streaming_content) == old_bytes

    new_page = citation_page_url(
        document, base_url="", page=1, caller=Caller(via="mcp", api_key=key.api_key)
    )
    text = client.get(_path(new_page)).content.decode()
    assert "fifty newton" in text and "newer revision" not in text


def test_a_link_to_a_revision_dropped_by_retention_is_gone(manual, key, settings):
    """With DOCUMENT_REVISIONS_KEPT=1 the old pages and original go with the
    switch; the old link answers 410 rather than showing another text."""
    settings.DOCUMENT_REVISIONS_KEPT = 1
    old_page = citation_page_url(
        manual, base_url="", page=1, caller=Caller(via="mcp", api_key=key.api_key)
    )
    _revise(manual, "Torque the bolts to fifty newton metres.")
    assert Client().get(_path(old_page)).status_code == 410
