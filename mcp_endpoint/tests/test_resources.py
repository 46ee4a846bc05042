"""documents://metadata/{document_ids} and index://stats."""

import json

import pytest

from documents.models import Document
from documents.tests.corpus import mark_synced

pytestmark = pytest.mark.django_db


def read_json(client, uri: str):
    contents = client.read_resource(uri)["contents"]
    assert contents[0]["uri"] == uri
    assert contents[0]["mimeType"] == "application/json"
    return json.loads(contents[0]["text"])


def test_metadata_of_listed_documents(mcp_any, papers):
    """Metadata keyed by id; ids the channel doesn't have (or not ready) are left
    out."""
    holidays = Document.objects.get(title="Holiday policy").pk
    expenses = Document.objects.get(title="Expense rules").pk
    foreign = Document.objects.get(title="Protein folding").pk
    draft = Document.objects.get(title="Draft").pk
    data = read_json(
        mcp_any, f"documents://metadata/{holidays},{expenses},{foreign},{draft}"
    )
    revised = {
        str(document.pk): document.revised_at.isoformat()
        for document in Document.objects.filter(pk__in=[holidays, expenses])
    }
    assert data == {
        str(holidays): {
            "topic": "holidays",
            "year": 2024,
            "team": "people",
            "revision": 1,
            "revised_at": revised[str(holidays)],
            "source": None,
            "source_url": None,
        },
        str(expenses): {
            "topic": "expenses",
            "year": 2023,
            "team": "finance",
            "revision": 1,
            "revised_at": revised[str(expenses)],
            "source": None,
            "source_url": None,
        },
    }


def test_metadata_of_a_synced_page_names_its_source_and_url(mcp_any):
    """A synced web page's entry has its source's name and its public URL
    beside its metadata; an upload's has null for both."""
    url = "https://handbook.example/holidays"
    holidays = mark_synced(
        Document.objects.get(title="Holiday policy"), key=url, url=url
    ).pk
    expenses = Document.objects.get(title="Expense rules").pk
    data = read_json(mcp_any, f"documents://metadata/{holidays},{expenses}")
    assert data[str(holidays)]["topic"] == "holidays"
    assert (data[str(holidays)]["source"], data[str(holidays)]["source_url"]) == (
        "Handbook site",
        url,
    )
    assert (data[str(expenses)]["source"], data[str(expenses)]["source_url"]) == (
        None,
        None,
    )


def test_a_channel_field_named_like_quires_takes_its_place(mcp):
    """A document's own metadata value named source_url (as the demo channel
    has) or revision is kept, not hidden by Quire's field of that name."""
    document = Document.objects.get(title="Expense rules")
    document.metadata = {
        **document.metadata,
        "source_url": "https://www.federalregister.gov/d/2020-17221",
        "revision": "C",
    }
    document.save(update_fields=["metadata"])
    entry = read_json(mcp, f"documents://metadata/{document.pk}")[str(document.pk)]
    assert entry["source_url"] == "https://www.federalregister.gov/d/2020-17221"
    assert (entry["revision"], entry["source"]) == ("C", None)


@pytest.mark.parametrize("ids", ["1,", ",1", "1,,2", "0", "1, 2", "abc", "", "01"])
def test_malformed_document_ids_are_rejected(mcp_any, ids):
    """Only comma-separated positive integers without spaces are accepted."""
    status, error = mcp_any.error(
        "resources/read", {"uri": f"documents://metadata/{ids}"}
    )
    assert error["code"] == -32602
    assert "comma" in error["message"]


def test_index_stats(mcp_any):
    """Counts by status, pages (and OCR pages), chunks and the embedding model."""
    stats = read_json(mcp_any, "index://stats")
    assert stats["documents"] == {
        "pending": 1,
        "processing": 0,
        "ready": 3,
        "failed": 0,
        "total": 4,
    }
    assert stats["pages"] == 6
    assert stats["ocr_pages"] == 0
    assert stats["chunks"] == 6
    assert stats["embedding_models_in_index"] == ["fake-bow-384"]
    assert stats["embedding_model"]


def test_index_stats_counts_pages_read_by_ocr(mcp_any):
    """Pages whose text was read by OCR are counted apart."""
    from documents.models import Page

    holidays = Document.objects.get(title="Holiday policy")
    Page.objects.filter(document=holidays, number=1).update(ocr=True)
    stats = read_json(mcp_any, "index://stats")
    assert (stats["pages"], stats["ocr_pages"]) == (6, 1)


def test_modern_resource_read_is_cacheable(mcp):
    """resources/read carries ttlMs and cacheScope in 2026-07-28."""
    result = mcp.read_resource("index://stats")
    assert result["ttlMs"] == 0 and result["cacheScope"] == "private"
