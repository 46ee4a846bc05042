import pytest

from documents.filters import FilterError
from documents.listing import document_output_schema, list_documents
from documents.models import Document
from documents.tests.corpus import add_document, mark_synced

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
    """Results carry id, title (file name when untitled), the file's name and
    format (to tell apart documents that share a title), page count, revision,
    provenance and the filterable metadata fields only; pending documents are
    not listed."""
    page = list_documents(shelf)
    assert page["total_count"] == 4
    assert (page["offset"], page["limit"]) == (0, 25)
    first = page["results"][0]
    assert set(first) == {
        "id",
        "title",
        "file_name",
        "format",
        "number_of_pages",
        "revision",
        "revised_at",
        "source",
        "source_url",
        "kind",
        "published",
    }
    assert (first["number_of_pages"], first["revision"]) == (2, 1)
    assert (first["file_name"], first["format"]) == (
        f"{first['title']}.txt",
        "plain text",
    )
    assert (first["source"], first["source_url"]) == (None, None)
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
    per filter value, fields, count and page, synced documents' sources
    included."""
    for number, document in enumerate(
        Document.objects.filter(title__in=["Old", "Newest"])
    ):
        mark_synced(document, source_name=f"Site {number}", key=f"/p{number}")
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
        "file_name",
        "format",
        "number_of_pages",
        "revision",
        "revised_at",
        "source",
        "source_url",
        "kind",
        "published",
    }
    assert item["properties"]["kind"]["anyOf"][1] == {"type": "null"}
    assert item["properties"]["source_url"]["anyOf"] == [
        {"type": "string", "format": "uri"},
        {"type": "null"},
    ]
    assert {"source", "source_url"} <= set(item["required"])
    assert schema["required"] == ["total_count", "offset", "limit", "results"]


def rows_by_title(channel) -> dict:
    return {row["title"]: row for row in list_documents(channel)["results"]}


def test_a_synced_web_page_lists_its_source_and_public_url(shelf):
    """A document synced from a web source lists the source's name and the
    page's URL; a synced entry without a public URL lists its source only;
    uploads list null for both."""
    mark_synced(
        Document.objects.get(title="Newest"),
        key="https://example.org/newest",
        url="https://example.org/newest",
    )
    mark_synced(
        Document.objects.get(title="Old"), source_name="Shared folder", key="old.pdf"
    )
    rows = rows_by_title(shelf)
    assert (rows["Newest"]["source"], rows["Newest"]["source_url"]) == (
        "Handbook site",
        "https://example.org/newest",
    )
    assert (rows["Old"]["source"], rows["Old"]["source_url"]) == (
        "Shared folder",
        None,
    )
    assert (rows["Middle"]["source"], rows["Middle"]["source_url"]) == (None, None)


def test_only_web_addresses_are_given_out_as_source_urls(shelf):
    """A stored source URL that is not http(s) (javascript:, file:, no host)
    is listed as null, never as given."""
    document = Document.objects.get(title="Newest")
    for stored in ("javascript:alert(1)", "file:///etc/passwd", "https:///nohost"):
        mark_synced(document, key="k", url=stored)
        assert rows_by_title(shelf)["Newest"]["source_url"] is None, stored
    mark_synced(document, key="k", url="HTTP://Example.org/a?b=1")
    assert rows_by_title(shelf)["Newest"]["source_url"] == "HTTP://Example.org/a?b=1"


def test_a_document_whose_source_is_deleted_keeps_its_url(shelf):
    """Deleting a source keeps its documents as uploads, with the page's URL:
    source null, source_url still where the page is."""
    document = mark_synced(
        Document.objects.get(title="Newest"),
        key="https://example.org/newest",
        url="https://example.org/newest",
    )
    document.source.delete()
    row = rows_by_title(shelf)["Newest"]
    assert (row["source"], row["source_url"]) == (None, "https://example.org/newest")


def test_a_channel_field_named_source_takes_its_place(make_channel, fake_embedder):
    """A channel's own filterable field named `source` is listed with its
    value and its type, in place of the source's name (the filter and the
    schema name the channel's field)."""
    channel = make_channel(
        fields=[{"name": "source", "type": "string", "filterable": True}]
    )
    document = add_document(
        channel, title="Report", pages=["x"], metadata={"source": "Nature"}
    )
    mark_synced(document, key="report", url="https://example.org/report")
    row = rows_by_title(channel)["Report"]
    assert row["source"] == "Nature"
    assert row["source_url"] == "https://example.org/report"
    schema = document_output_schema(channel)["properties"]["results"]["items"]
    assert schema["properties"]["source"]["anyOf"] == [
        {"type": "string"},
        {"type": "null"},
    ]
