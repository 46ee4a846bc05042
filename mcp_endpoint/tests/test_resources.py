"""documents://metadata/{document_ids} and index://stats."""

import json

import pytest

from documents.models import Document

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
        },
        str(expenses): {
            "topic": "expenses",
            "year": 2023,
            "team": "finance",
            "revision": 1,
            "revised_at": revised[str(expenses)],
        },
    }


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
