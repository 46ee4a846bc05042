"""A revision that arrives from a sync is a revision like any other (the
switch itself is tested in test_revisions*.py): the document keeps its id,
title and metadata, and a citation link made for the old revision still
opens it and says a newer one exists."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from documents.access import COMMAND_LINE, Caller
from documents.models import Document
from documents.services.ingestion import ingest_document
from documents.services.keys import create_api_key
from documents.tests.syncing import add_folder_source, by_key, counts, sync, write
from mcp_endpoint.citations import citation_page_url

pytestmark = pytest.mark.django_db


def test_a_synced_revision_keeps_the_document_and_its_old_citation_link(
    make_channel, folder, fake_embedder
):
    channel = make_channel(fields=[{"name": "year", "type": "number"}])
    write(folder / "torque.txt", "Torque the bolts to forty newton metres.")
    write(folder / "torque.txt.meta.json", json.dumps({"year": 2024}))
    source = add_folder_source(channel, folder)
    sync(source)
    (document,) = by_key(source).values()
    document = ingest_document(document_id=document.pk)
    key = create_api_key(actor=COMMAND_LINE, name="agent", channels=[channel])
    caller = Caller(via="mcp", api_key=key.api_key)
    old_link = citation_page_url(document, base_url="", page=1, caller=caller)

    write(folder / "torque.txt", "Torque the bolts to fifty newton metres.")
    row = sync(source)
    assert counts(row) == (0, 1, 0, 0, 0), row.errors
    revised = ingest_document(document_id=document.pk)
    assert revised.pk == document.pk and revised.revision == 2
    assert (revised.title, revised.metadata) == (document.title, {"year": 2024})
    assert Document.objects.filter(channel=channel).count() == 1

    client = Client()
    old = client.get(old_link.split("#")[0])
    assert old.status_code == 200
    text = old.content.decode()
    assert "forty newton" in text and "fifty" not in text
    assert "A newer revision (2) exists" in text
    new_link = citation_page_url(revised, base_url="", page=1, caller=caller)
    text = client.get(new_link.split("#")[0]).content.decode()
    assert "fifty newton" in text and "newer revision" not in text
