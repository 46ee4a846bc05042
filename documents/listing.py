"""`list_documents`: a page of a channel's ready documents, with its output schema."""

from django.conf import settings
from django.core import signing
from django.db.models import F, OrderBy

from documents.filters import compile_filter, filter_fields
from documents.ingestion.formats import label_of
from documents.models import Channel, Document, MetadataField
from documents.replicas import replica_read
from documents.results import (
    DocumentPage,
    output_schema,
    provenance_of,
    revision_of,
)

# newest_sort may also name these columns of Document, besides metadata fields.
_DOCUMENT_SORT_COLUMNS = {"created_at", "updated_at", "ingested_at", "title", "id"}

_JSON_TYPES = {
    MetadataField.FieldType.STRING: {"type": "string"},
    MetadataField.FieldType.STRING_LIST: {"type": "array", "items": {"type": "string"}},
    MetadataField.FieldType.DATE: {"type": "string", "format": "date"},
    MetadataField.FieldType.NUMBER: {"type": "number"},
    MetadataField.FieldType.BOOLEAN: {"type": "boolean"},
}


@replica_read
def list_documents(
    channel: Channel,
    *,
    metadata_filter: dict | None = None,
    offset: int = 0,
    limit: int = 25,
    newest_first: bool = True,
) -> dict:
    """A page of the channel's ready documents matching `metadata_filter`.

    Ordered by the channel's `newest_sort` (reversed when `newest_first` is false),
    else by document id ascending (upload order). `limit` is capped at
    settings.MCP_LIST_LIMIT_MAX. Raises FilterError for a bad filter.
    """
    limit = max(1, min(int(limit), settings.MCP_LIST_LIMIT_MAX))
    offset = max(0, int(offset))
    documents = (
        Document.objects.for_channel(channel)
        .ready()
        .filter(compile_filter(channel, metadata_filter))
    )
    total = documents.count()
    page = (
        documents.order_by(*document_ordering(channel, newest_first))
        .select_related("source")
        .only(
            "id",
            "title",
            "original_filename",
            "content_type",
            "page_count",
            "metadata",
            "revision",
            "revised_at",
            "source__name",
            "source_url",
        )[offset : offset + limit]
    )
    shown = [field.name for field in filter_fields(channel)]
    results = []
    for document in page:
        row = {
            "id": document.id,
            "title": document.title or document.original_filename,
            "file_name": document.original_filename,
            "format": label_of(document.content_type),
            "number_of_pages": document.page_count,
            **revision_of(document),
            **provenance_of(document),
        }
        for name in shown:
            row[name] = document.metadata.get(name)
        results.append(row)
    return {"total_count": total, "offset": offset, "limit": limit, "results": results}


CURSOR_SALT = "quire.listing.cursor"


class BadCursor(ValueError):
    """A cursor that was not made by next_cursor for this channel."""


def next_cursor(
    channel: Channel,
    page: dict,
    *,
    metadata_filter: dict | None,
    newest_first: bool,
) -> str | None:
    """An opaque, signed cursor for the page after `page` (a list_documents
    result), or None on the last page.

    It carries the listing's filter and order with the next offset, so the
    cursor alone continues the listing; the channel is signed into it, so a
    cursor cannot be replayed against another channel."""
    offset = page["offset"] + len(page["results"])
    if offset >= page["total_count"] or not page["results"]:
        return None
    state = {
        "c": channel.pk,
        "o": offset,
        "l": page["limit"],
        "f": metadata_filter,
        "n": newest_first,
    }
    return signing.dumps(state, salt=CURSOR_SALT, compress=True)


def read_cursor(channel: Channel, cursor: str) -> dict:
    """The listing a cursor continues: {metadata_filter, offset, limit,
    newest_first}. Raises BadCursor for a forged, damaged or foreign cursor."""
    try:
        state = signing.loads(cursor, salt=CURSOR_SALT)
    except signing.BadSignature:
        raise BadCursor(
            "This cursor is not valid; list again without one to start over."
        ) from None
    if not isinstance(state, dict) or state.get("c") != channel.pk:
        raise BadCursor("This cursor belongs to another listing; list again.")
    return {
        "metadata_filter": state.get("f"),
        "offset": int(state.get("o", 0)),
        "limit": int(state.get("l", 25)),
        "newest_first": bool(state.get("n", True)),
    }


def document_ordering(channel: Channel, newest_first: bool = True) -> list:
    """ORDER BY terms for the channel's documents; always ends with a unique key."""
    ordering = []
    for item in channel.newest_sort or []:
        name = item["field"]
        descending = item.get("direction", "desc") == "desc"
        if not newest_first:
            descending = not descending
        # jsonb order keeps numbers numeric and ISO dates chronological.
        expression = (
            F(name) if name in _DOCUMENT_SORT_COLUMNS else F(f"metadata__{name}")
        )
        ordering.append(OrderBy(expression, descending=descending, nulls_last=True))
    ordering.append(
        OrderBy(F("id"), descending=bool(channel.newest_sort) and newest_first)
    )
    return ordering


def document_output_schema(channel: Channel) -> dict:
    """JSON schema of list_documents' result for this channel: the shared
    DocumentPage with this channel's filterable fields in each row."""
    metadata_properties = {
        field.name: {
            "anyOf": [_JSON_TYPES[field.type], {"type": "null"}],
            **({"description": field.description} if field.description else {}),
        }
        for field in filter_fields(channel)
    }
    schema = output_schema(DocumentPage)
    row = schema["properties"]["results"]["items"]
    row["properties"].update(metadata_properties)
    return schema
