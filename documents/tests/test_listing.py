import pytest

from documents.filters import FilterError
from documents.listing import document_output_schema, list_documents
from documents.models import Document
from documents.tests.corpus import add_document

FIELDS = [
    {"name": "kind", "type": "string", "filterable": True},
    {"name": "published", "type": "date", "filterable": True},
    {"name": "secret", "type": "string", "filterable": False},
]


@pytest.fixture
def shelf(make_channel, fake_embedder):
    channel = make_channel(fields=FIELDS)
    for title, kind, published in [
        ("Old", "memo", "2020-01-01"),
        ("Newest", "report", "2024-05-01"),
        ("Middle", "report", "2022-01-01"),
        ("", "memo", "2021-01-01"),
    ]:
        add_document(
            channel,
            title=title,
            pages=["one", "two"],
            metadata={"kind": kind, "published": published, "secret": "x"},
        )
    add_document(channel, title="Pending", pages=["p"], status=Document.Status.PENDING)
    return channel


def test_lists_ready_documents_with_title_pages_and_filterable_fields(shelf):
    """Results carry id, title (file name when untitled), page count, revision
    and the filterable metadata fields only; pending documents are not listed."""
    page = list_documents(shelf)
    assert page["total_count"] == 4
    assert (page["offset"], page["limit"]) == (0, 25)
    first = page["results"][0]
    assert set(first) == {
        "id",
        "title",
        "number_of_pages",
        "revision",
        "revised_at",
        "kind",
        "published",
    }
    assert (first["number_of_pages"], first["revision"]) == (2, 1)
    titles = [row["title"] for row in page["results"]]
    assert "document.txt" in titles and "Pending" not in titles


def test_without_newest_sort_order_is_by_id(shelf):
    """Without newest_sort documents come in upload (id) order."""
    ids = [row["id"] for row in list_documents(shelf)["results"]]
    assert ids == sorted(ids)


def test_newest_sort_orders_newest_first_and_reverses(shelf):
    """With newest_sort the order follows it; newest_first=False reverses it."""
    shelf.newest_sort = [{"field": "published", "direction": "desc"}]
    shelf.save()
    newest = [row["title"] for row in list_documents(shelf)["results"]]
    assert newest == ["Newest", "Middle", "document.txt", "Old"]
    oldest = [
        row["title"] for row in list_documents(shelf, newest_first=False)["results"]
    ]
    assert oldest == list(reversed(newest))


def test_filter_offset_and_limit_page_the_results(shelf):
    """The filter restricts, offset/limit page, total_count counts all matches."""
    page = list_documents(shelf, metadata_filter={"kind": "report"}, offset=1, limit=1)
    assert page["total_count"] == 2
    assert len(page["results"]) == 1
    assert page["results"][0]["kind"] == "report"


def test_limit_is_capped(shelf, settings):
    """limit is capped at MCP_LIST_LIMIT_MAX and at least 1; offset at least 0."""
    settings.MCP_LIST_LIMIT_MAX = 2
    page = list_documents(shelf, limit=1000, offset=-5)
    assert (page["limit"], page["offset"], len(page["results"])) == (2, 0, 2)
    assert list_documents(shelf, limit=0)["limit"] == 1


def test_bad_filter_raises_filter_error(shelf):
    """An invalid filter is a FilterError, not an empty page."""
    with pytest.raises(FilterError):
        list_documents(shelf, metadata_filter={"secret": "x"})


def test_listing_runs_a_fixed_number_of_queries(shelf, django_assert_max_num_queries):
    """Listing costs a few queries whatever the page size (no N+1): one probe
    per filter value, fields, count and page."""
    shelf = type(shelf).objects.get(pk=shelf.pk)
    with django_assert_max_num_queries(6):
        list_documents(shelf, metadata_filter={"kind": ["memo", "report"]}, limit=100)


def test_output_schema_describes_results_with_channel_fields(shelf):
    """The output schema lists the channel's filterable fields as nullable."""
    schema = document_output_schema(shelf)
    item = schema["properties"]["results"]["items"]
    assert set(item["properties"]) == {
        "id",
        "title",
        "number_of_pages",
        "revision",
        "revised_at",
        "kind",
        "published",
    }
    assert item["properties"]["kind"]["anyOf"][1] == {"type": "null"}
    assert schema["required"] == ["total_count", "offset", "limit", "results"]
