import pytest

from documents.filters import FilterError, compile_filter, filter_schema
from documents.models import Document
from documents.tests.corpus import add_document

FIELDS = [
    {"name": "kind", "type": "string", "filterable": True},
    {"name": "tags", "type": "string_list", "filterable": True},
    {"name": "published", "type": "date", "filterable": True},
    {"name": "pages", "type": "number", "filterable": True},
    {"name": "public", "type": "boolean", "filterable": True},
    {"name": "source", "type": "url", "filterable": True},
    {"name": "owner", "type": "string", "filterable": False},
]


@pytest.fixture
def library(make_channel, fake_embedder):
    channel = make_channel(fields=FIELDS)
    rows = [
        ("Annual report", "report", ["finance", "board"], "2023-03-01", 40, True),
        ("Budget", "report", ["finance"], "2024-01-15", 12, False),
        ("Handbook", "manual", ["hr"], "2022-06-30", 80, True),
        ("Safety manual", "manual", ["hr", "safety"], "2024-01-15", 25, False),
        ("Memo", "memo", [], None, 1, True),
    ]
    for title, kind, tags, published, pages, public in rows:
        metadata = {"kind": kind, "pages": pages, "public": public, "owner": "ann"}
        if tags:
            metadata["tags"] = tags
        if published:
            metadata["published"] = published
        add_document(channel, title=title, pages=[f"{title} text"], metadata=metadata)
    return channel


def titles(channel, metadata_filter) -> set[str]:
    condition = compile_filter(channel, metadata_filter)
    return set(
        Document.objects.for_channel(channel)
        .filter(condition)
        .values_list("title", flat=True)
    )


ALL = {"Annual report", "Budget", "Handbook", "Safety manual", "Memo"}


def test_no_filter_matches_everything(library):
    """None and {} restrict nothing."""
    assert titles(library, None) == ALL
    assert titles(library, {}) == ALL


def test_string_field_matches_one_value_or_any_of_a_list(library):
    """A string field matches a single value, or any value of a list."""
    assert titles(library, {"kind": "manual"}) == {"Handbook", "Safety manual"}
    assert titles(library, {"kind": ["memo", "report"]}) == {
        "Annual report",
        "Budget",
        "Memo",
    }


def test_string_list_field_matches_documents_containing_any_value(library):
    """A string_list field matches documents whose list contains any given value."""
    assert titles(library, {"tags": "finance"}) == {"Annual report", "Budget"}
    assert titles(library, {"tags": ["board", "safety"]}) == {
        "Annual report",
        "Safety manual",
    }


def test_date_range_is_inclusive_and_either_end_is_optional(library):
    """Date ranges include both ends; a missing end is open; undated documents never
    match a range."""
    assert titles(
        library, {"published": {"start": "2023-03-01", "end": "2024-01-15"}}
    ) == {"Annual report", "Budget", "Safety manual"}
    assert titles(library, {"published": {"start": "2024-01-01"}}) == {
        "Budget",
        "Safety manual",
    }
    assert titles(library, {"published": {"end": "2022-12-31"}}) == {"Handbook"}


def test_latest_date_is_the_newest_among_documents_matching_other_conditions(library):
    """ "latest" keeps the documents with the newest date, computed after the other
    conditions apply."""
    assert titles(library, {"published": "latest"}) == {"Budget", "Safety manual"}
    assert titles(library, {"published": "latest", "tags": "board"}) == {
        "Annual report"
    }
    assert titles(library, {"published": "latest", "kind": "manual"}) == {
        "Safety manual"
    }


def test_number_matches_a_value_or_an_inclusive_range(library):
    """A number field matches an exact number or an inclusive {min, max} range."""
    assert titles(library, {"pages": 12}) == {"Budget"}
    assert titles(library, {"pages": {"min": 25, "max": 40}}) == {
        "Annual report",
        "Safety manual",
    }
    assert titles(library, {"pages": {"min": 50}}) == {"Handbook"}
    assert titles(library, {"pages": {"max": 1.5}}) == {"Memo"}


def test_boolean_matches_true_or_false(library):
    """A boolean field matches documents with that value."""
    assert titles(library, {"public": False}) == {"Budget", "Safety manual"}
    assert titles(library, {"public": True}) == {"Annual report", "Handbook", "Memo"}


def test_fields_combine_with_and(library):
    """Several fields narrow together."""
    assert titles(
        library, {"kind": "manual", "public": True, "pages": {"min": 10}}
    ) == {"Handbook"}


def test_unknown_field_error_names_allowed_fields_and_closest(library):
    """An unknown field is an error listing the fields one can filter on and the
    closest name."""
    with pytest.raises(FilterError) as error:
        compile_filter(library, {"kinds": "manual"})
    message = str(error.value)
    assert "'kinds'" in message and "did you mean 'kind'" in message
    assert "kind, pages, public, published, tags" in message


def test_non_filterable_and_url_fields_are_not_filter_fields(library):
    """Fields not marked filterable, and url fields, cannot be filtered on."""
    for name, value in (("owner", "ann"), ("source", "https://example.org")):
        with pytest.raises(FilterError, match="Unknown filter field"):
            compile_filter(library, {name: value})


def test_value_not_in_use_error_lists_closest_values(library):
    """A string value no document has is an error naming the closest values in
    use, never an empty or widened search."""
    with pytest.raises(FilterError) as error:
        compile_filter(library, {"kind": "manuals"})
    assert "'manual'" in str(error.value)
    assert "closest" in str(error.value)
    with pytest.raises(FilterError, match="'safety'"):
        compile_filter(library, {"tags": ["hr", "safty"]})


@pytest.mark.parametrize(
    "metadata_filter, expected",
    [
        ("kind=manual", "must be an object"),
        ({"kind": 3}, "expected a string or a non-empty list"),
        ({"kind": []}, "expected a string or a non-empty list"),
        ({"tags": [1, 2]}, "expected a string or a non-empty list"),
        ({"published": "2024"}, "YYYY-MM-DD"),
        ({"published": {"start": "2024-02-30"}}, "not a date"),
        ({"published": {"from": "2024-01-01"}}, "not 'from'"),
        ({"published": {}}, "a range takes 'start' and/or 'end'"),
        ({"published": {"start": "2024-02-01", "end": "2024-01-01"}}, "is after"),
        ({"pages": "12"}, "expected a number"),
        ({"pages": {"min": "1"}}, "pages.min: expected a number"),
        ({"pages": {"min": 5, "max": 2}}, "greater than max"),
        ({"pages": {"least": 5}}, "not 'least'"),
        ({"pages": True}, "expected a number"),
        ({"public": "yes"}, "expected true or false"),
    ],
)
def test_malformed_values_are_errors_that_say_what_is_expected(
    library, metadata_filter, expected
):
    """Every malformed value or range raises a FilterError explaining the shape."""
    with pytest.raises(FilterError) as error:
        compile_filter(library, metadata_filter)
    assert expected in str(error.value)


def test_schema_is_nullable_and_lists_values_in_use(library):
    """The schema is `<object> | null`; string fields enumerate values in use and
    forbid unknown properties."""
    schema = filter_schema(library)
    assert schema["anyOf"][1] == {"type": "null"}
    body = schema["anyOf"][0]
    assert body["additionalProperties"] is False
    assert set(body["properties"]) == {"kind", "tags", "published", "pages", "public"}
    kind = body["properties"]["kind"]["anyOf"]
    assert kind[0]["enum"] == ["manual", "memo", "report"]
    assert kind[1]["items"]["enum"] == ["manual", "memo", "report"]
    tags = body["properties"]["tags"]["anyOf"]
    assert tags[0]["enum"] == ["board", "finance", "hr", "safety"]
    published = body["properties"]["published"]["anyOf"]
    assert published[1] == {"type": "string", "enum": ["latest"]}
    assert set(published[0]["properties"]) == {"start", "end"}
    assert body["properties"]["public"]["type"] == "boolean"
    assert body["properties"]["pages"]["anyOf"][0] == {"type": "number"}


def test_schema_and_filter_are_narrowed_by_filterable_fields(library):
    """Channel.filterable_fields limits both the schema and what compiles."""
    library.filterable_fields = ["kind", "public"]
    library.save()
    schema = filter_schema(library)
    assert set(schema["anyOf"][0]["properties"]) == {"kind", "public"}
    with pytest.raises(FilterError, match="Fields you can filter on: kind, public"):
        compile_filter(library, {"tags": "hr"})


def test_string_field_without_values_has_no_enum_and_rejects_values(make_channel):
    """A string field no document uses yet has no enum, and filtering on it says so."""
    channel = make_channel(
        slug="empty", fields=[{"name": "kind", "type": "string", "filterable": True}]
    )
    kind = filter_schema(channel)["anyOf"][0]["properties"]["kind"]["anyOf"][0]
    assert kind == {"type": "string"}
    with pytest.raises(FilterError, match="no document has a value"):
        compile_filter(channel, {"kind": "x"})
