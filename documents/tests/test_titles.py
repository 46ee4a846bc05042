"""Titles a person would give."""

import pytest

from documents.ingestion.titles import (
    choose_title,
    file_title,
    first_line_title,
    looks_like_title,
)


@pytest.mark.parametrize(
    ("raw", "producer", "expected"),
    [
        ("Geometrie und Topologie", "", "Geometrie und Topologie"),
        ("COVID&#x02010;19 vaccination", "", "COVID\u201019 vaccination"),
        ("  Spaced   out \n title ", "", "Spaced out title"),
        ("Mozilla", "", "Mozilla"),
        ("Untitled", "", ""),
        ("loremipsum.jpg", "", ""),
        ("905_Precinct_NoOU", "", ""),
        ("imagemagick-images\x00", "", ""),
        ("habibi", "WeasyPrint 54.1", ""),
        ("Unstructured-test-doc", "", ""),
        ("Adobe Photoshop PDF", "", ""),
        ("Microsoft Word - report.docx", "", ""),
        ("C:\\Users\\me\\Desktop\\scan", "", ""),
        ("arXiv:2206.10883v3 [cs.CL] 22 Jul 2022", "", ""),
        ("Table of Contents", "", ""),
        ("GPL Ghostscript 9.25", "GPL Ghostscript 9.25", ""),
        ("", "", ""),
    ],
)
def test_a_files_own_title_is_used_only_when_it_looks_like_one(raw, producer, expected):
    """Entities are decoded and NULs removed; producer names, file names, paths,
    placeholders, slugs and identifier stamps are no titles."""
    assert choose_title(raw, producer=producer) == expected
    assert looks_like_title(raw, producer=producer) == bool(expected)


def test_the_first_candidate_that_looks_like_a_title_wins():
    """The metadata title first, then the heading, else nothing (the caller
    falls back to the file name)."""
    assert choose_title("Untitled", "Annual Report 2024") == "Annual Report 2024"
    assert choose_title("Real Title", "A heading") == "Real Title"
    assert choose_title("", "") == ""


def test_the_file_name_without_its_extension():
    assert file_title("report.final.pdf") == "report.final"
    assert file_title("notes") == "notes"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Quarterly maintenance report\n\nThe fleet...",
            "Quarterly maintenance report",
        ),
        (
            "\n\n**AutoGen: multi-agent conversation**\n\nBody.",
            "AutoGen: multi-agent conversation",
        ),
        ("This sentence opens the file and ends with a stop.\nMore.", ""),
        (" ".join(["word"] * 20), ""),
        ("", ""),
    ],
)
def test_a_first_line_that_stands_alone_is_a_title_candidate(text, expected):
    """A short first line, not a sentence, marks around it dropped."""
    assert first_line_title(text) == expected


def test_the_title_given_to_the_chunks_is_the_final_title(tmp_path):
    """Slides whose first slide has no heading: a later slide's heading must not
    become the title after the first chunks were given theirs (their contexts
    and embeddings carry it)."""
    from documents.ingestion.parsers import _document

    def slide(number, text):
        return {
            "kind": "page",
            "number": number,
            "text": text,
            "notes": [],
            "markdown": True,
            "plain": False,
            "split": True,
        }

    given = []
    parsed = _document(
        [
            {"kind": "document"},
            slide(1, "just some words on the first slide, no heading at all here"),
            slide(2, "# Quarterly Results\n\nRevenue grew."),
            {"kind": "end", "notes": []},
        ],
        tmp_path,
        10_000,
        None,
        given.append,
        None,
    )
    assert given == [parsed.title]
