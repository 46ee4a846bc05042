import pytest
from django.core.exceptions import ValidationError

from documents.metadata import clean_metadata
from documents.models import MetadataField

FIELDS = [
    MetadataField(name="author", type="string", required=True),
    MetadataField(name="tags", type="string_list"),
    MetadataField(name="published", type="date"),
    MetadataField(name="year", type="number"),
    MetadataField(name="public", type="boolean"),
    MetadataField(name="source", type="url"),
]


def test_values_are_normalised():
    """Strings are trimmed, lists split, dates ISO, numbers and booleans parsed."""
    cleaned = clean_metadata(
        FIELDS,
        {
            "author": " Ada ",
            "tags": "a, b,",
            "published": "2024-02-01",
            "year": "2024",
            "public": "true",
            "source": "https://example.org/x",
        },
    )
    assert cleaned == {
        "author": "Ada",
        "tags": ["a", "b"],
        "published": "2024-02-01",
        "year": 2024,
        "public": True,
        "source": "https://example.org/x",
    }


def test_every_problem_is_reported():
    """Unknown fields, bad values and missing required ones each get a message."""
    with pytest.raises(ValidationError) as excinfo:
        clean_metadata(
            FIELDS,
            {"colour": "red", "published": "yesterday", "year": "many", "public": "?"},
        )
    text = " ".join(excinfo.value.messages)
    assert "Unknown field(s): colour" in text
    assert "published: 'yesterday' is not a date" in text
    assert "year: 'many' is not a number" in text
    assert "public: '?' is not true or false" in text
    assert "author: a value is required" in text
