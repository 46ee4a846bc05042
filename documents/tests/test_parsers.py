import codecs
import os
from dataclasses import replace
from pathlib import Path

import pytest

from documents.generation.sentences import split_sentences
from documents.ingestion import formats
from documents.ingestion.context import marked_headings
from documents.ingestion.formats import resolve_content_type
from documents.ingestion.parsed import UnreadableFile
from documents.ingestion.parsers import parse_file, reader_limits
from documents.ingestion.reader_child import ReaderTimedOut
from documents.ingestion.reading import read_in_child
from documents.ingestion.text import decode_text, markdown_title
from documents.tests.fixtures import make_pdf, make_styled_pdf, pdf_from_objects


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _parse(path: Path, tmp_path: Path, content_type: str, **limits):
    """parse_file with the settings' limits, `limits` changed."""
    work_dir = tmp_path / "work"
    work_dir.mkdir(exist_ok=True)
    return parse_file(
        path,
        content_type,
        work_dir=work_dir,
        limits=replace(reader_limits(path.stat().st_size), **limits),
    )


def _parse_pdf(path: Path, tmp_path: Path, **limits):
    options = {"image_width": 300, "max_pages": 50, "timeout": 60, "memory_mb": 2048}
    return _parse(path, tmp_path, "application/pdf", **{**options, **limits})


def parse_text(path: Path, *, markdown: bool, max_page_chars: int):
    """A text file read by the reader child, as uploads are."""
    content_type = "text/markdown" if markdown else "text/plain"
    return _parse(path, path.parent, content_type, text_page_chars=max_page_chars)


def test_pdf_text_and_images_per_page(tmp_path):
    """Each page yields its own text and a PNG rendered at the requested width;
    blank pages have no text."""
    path = _write(
        tmp_path, "a.pdf", make_pdf(["Alpha page\nmore alpha", "", "Gamma page"])
    )
    parsed = _parse_pdf(path, tmp_path, image_width=240)
    assert [page.number for page in parsed.pages] == [1, 2, 3]
    assert parsed.pages[0].text == "Alpha page\nmore alpha"
    assert [page.has_text for page in parsed.pages] == [True, False, True]
    for page in parsed.pages:
        assert page.image_path.read_bytes().startswith(b"\x89PNG")
        assert page.width == 240
        assert page.height > page.width  # a portrait letter page
    assert parsed.has_text and not parsed.warnings


BODY = "Each frond carries small brown dots on its underside, the sporangia."


def test_pdf_lines_in_large_or_bold_type_are_marked_as_headings(tmp_path):
    """A line set larger than the body text, or in bold type of the body's
    size, is a heading: its line entry carries its level, larger type a lower
    level; body lines, and a run of many lines in large type, carry none."""
    blurb = [("Grow them in shade and keep the soil moist", 15, False)] * 5
    data = make_styled_pdf(
        [
            [
                ("Field guide to ferns", 20, True),
                ("Propagation", 15, True),
                *[(BODY, 11, False)] * 6,
                ("Sporangia", 13, False),
                *[(BODY, 11, False)] * 6,
            ],
            [*[(BODY, 11, False)] * 4, ("Division", 11, True), *blurb],
        ]
    )
    parsed = _parse_pdf(_write(tmp_path, "ferns.pdf", data), tmp_path)
    first, second = parsed.pages
    marked = [
        [
            (page.text[start:end], level)
            for start, end, level in marked_headings(page.lines)
        ]
        for page in (first, second)
    ]
    assert [text for text, _ in marked[0]] == [
        "Field guide to ferns",
        "Propagation",
        "Sporangia",
    ]
    levels = [level for _, level in marked[0]]
    assert levels == sorted(levels) and len(set(levels)) == 3
    assert [text for text, _ in marked[1]] == ["Division"]
    assert marked[1][0][1] > levels[-1]
    # The marks are offsets into the cleaned page text, as the line boxes are.
    assert all(
        len(line) == 6 for line in first.lines if BODY in first.text[line[0] : line[1]]
    )


def test_contents_lines_and_running_heads_are_no_headings(tmp_path):
    """A contents line with dot leaders and a line in large type repeated on
    another page (a running head, its page number aside) are not marked, not
    even where the running head first appears."""
    data = make_styled_pdf(
        [
            [
                ("Ferns of the north 1", 14, False),
                ("Contents . . . . . . . . 3", 11, True),
                *[(BODY, 11, False)] * 6,
                ("Spores", 11, True),
                *[(BODY, 11, False)] * 2,
            ],
            [("Ferns of the north 2", 14, False), *[(BODY, 11, False)] * 6],
        ]
    )
    parsed = _parse_pdf(_write(tmp_path, "ferns.pdf", data), tmp_path)
    first, second = (
        [page.text[start:end] for start, end, _ in marked_headings(page.lines)]
        for page in parsed.pages
    )
    assert first == ["Spores"]
    assert second == []


def _page_with_footnotes() -> bytes:
    """A page whose content draws its footnotes (8 pt, each opening with a
    5 pt raised marker) at the foot before the body text (11 pt) at the top,
    as the Federal Register's pages do; the body opens in lower case, going on
    from the page before."""
    body = [
        "require operators to conduct a sensor system test and",
        "perform a readiness flight before returning each airplane",
        "to service. Operators would also revise the flight manual.",
    ]
    notes = [
        ("4", "The angle of attack is the angle at which the wing"),
        ("", "meets the oncoming air."),
        ("5", "Stall warning is the activation of the stick shaker."),
    ]
    operations = []
    y = 160.0
    for marker, line in notes:
        if marker:
            operations.append(f"BT /F1 5 Tf 72 {y + 3:g} Td ({marker}) Tj ET")
        operations.append(f"BT /F1 8 Tf 76 {y:g} Td ({line}) Tj ET")
        y -= 11
    y = 720.0
    for line in body:
        operations.append(f"BT /F1 11 Tf 72 {y:g} Td ({line}) Tj ET")
        y -= 15
    return _one_page_pdf(operations)


def _one_page_pdf(operations: list[str]) -> bytes:
    """A letter page drawing `operations` (/F1 is Helvetica, /F2 its bold)."""
    stream = "\n".join(operations).encode("latin-1")
    return pdf_from_objects(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [5 0 R] /Count 1 >>",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R /F2 4 0 R >> >> /Contents 6 0 R >>",
            b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
        ]
    )


def test_footnotes_are_set_apart_from_the_body_text(tmp_path):
    """Footnotes in small type, read before the body text, are parted from it
    (and each from the one before, at its marker) by a blank line, so that no
    sentence joins a footnote to the body or two footnotes (issue 22: the 737
    MAX directive's "sensor system test" sentence opened with a footnote)."""
    parsed = _parse_pdf(_write(tmp_path, "noted.pdf", _page_with_footnotes()), tmp_path)
    page = parsed.pages[0]
    units = [
        unit.text for unit in split_sentences(page.text, marked_headings(page.lines))
    ]
    assert "require operators to conduct a sensor system test" in page.text
    body = [unit for unit in units if "sensor system test" in unit]
    assert body and body[0].startswith("require operators")
    assert not any("oncoming air" in unit and "Stall" in unit for unit in units)
    assert any(unit.startswith("5Stall warning") for unit in units)
    # The line boxes still cover their own text.
    texts = [page.text[start:end] for start, end, *_ in page.lines]
    assert "meets the oncoming air." in texts
    assert texts[-1] == "to service. Operators would also revise the flight manual."


def test_a_tables_bold_header_cells_are_no_headings(shared_data, tmp_path):
    """The bold header cells of a table, side by side in one band of the page
    (the WARN report's "Notice Date", "Layoff/Closure"), are not headings; the
    report's title above the table is."""
    path = (
        shared_data / "pdfs/text/pdfplumber__WARN-Report-for-7-1-2015-to-03-25-2016.pdf"
    )
    parsed = _parse_pdf(path, tmp_path)
    page = parsed.pages[0]
    marked = [page.text[start:end] for start, end, _ in marked_headings(page.lines)]
    assert "WARN Report*" in marked
    assert "Notice Date" in page.text and "Notice Date" not in marked
    assert "Layoff/Closure" not in marked


def test_pdf_page_cap_is_a_clear_failure(tmp_path):
    """A PDF with more pages than the cap fails and says both numbers."""
    path = _write(tmp_path, "long.pdf", make_pdf(["one", "two", "three"]))
    with pytest.raises(UnreadableFile) as excinfo:
        _parse_pdf(path, tmp_path, max_pages=2)
    assert "3 pages" in excinfo.value.reason
    assert "limit is 2" in excinfo.value.reason


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", "empty"),
        (b"Hello, I am a text file pretending to be a PDF.\n", "not a PDF"),
        (make_pdf(["some text " * 50])[:-300], "truncated"),
        (b"%PDF-1.4\nnothing that parses\n%%EOF\n", "corrupt"),
    ],
)
def test_unreadable_pdfs_fail_with_a_readable_reason(tmp_path, data, expected):
    """Empty, foreign, truncated and corrupt files are told apart."""
    path = _write(tmp_path, "bad.pdf", data)
    with pytest.raises(UnreadableFile) as excinfo:
        _parse_pdf(path, tmp_path)
    assert expected in excinfo.value.reason


def test_reader_time_limit(tmp_path):
    """A reader that never finishes (its file is a pipe nobody writes to, so
    opening it blocks forever) is killed at the time limit, and the reason
    names the setting: unbounded slowness, so no machine is fast enough to
    finish first."""
    path = tmp_path / "never.txt"
    os.mkfifo(path)
    limits = replace(reader_limits(0), timeout=1.0)
    with pytest.raises(ReaderTimedOut) as excinfo:
        list(read_in_child(path, "text/plain", work_dir=tmp_path, limits=limits))
    assert "longer than 1 seconds" in excinfo.value.reason
    assert "PDF_PARSE_TIMEOUT" in excinfo.value.reason


def test_a_failing_reader_fails_only_its_document(tmp_path):
    """When the reader process dies (here: too little memory to even load
    PDFium), parsing raises UnreadableFile instead of taking the caller down."""
    path = _write(tmp_path, "a.pdf", make_pdf(["text"]))
    with pytest.raises(UnreadableFile) as excinfo:
        _parse_pdf(path, tmp_path, memory_mb=20)
    assert "crashed" in excinfo.value.reason or "memory" in excinfo.value.reason


@pytest.mark.parametrize(
    "foot, title",
    [
        (["6"], ""),
        (["1"], "MAIN GAME"),
        ([], "MAIN GAME"),
        (["2", "For instance, the score drops by half."], "MAIN GAME"),
    ],
)
def test_a_page_from_inside_a_longer_work_is_not_titled_by_its_section(
    tmp_path, foot, title
):
    """A first page printed with a page number other than 1 (page 6 of a game
    manual) comes from inside a longer work: its largest type ("MAIN GAME") is
    a section's heading, not the document's title, so the file name is used.
    Numbered 1, or not at all, the largest type is the title; so it is when
    the figure at the foot is a footnote's marker, with the note below it."""
    operations = ["BT /F2 16 Tf 250 720 Td (MAIN GAME) Tj ET"]
    operations += [
        f"BT /F1 12 Tf 72 {680 - 16 * i} Td ({BODY}) Tj ET" for i in range(12)
    ]
    for number, line in enumerate(foot):
        operations.append(f"BT /F1 12 Tf 300 {70 - 14 * number} Td ({line}) Tj ET")
    path = _write(tmp_path, "DA-1p.pdf", _one_page_pdf(operations))
    assert _parse_pdf(path, tmp_path).title == title


def test_pdf_title_comes_from_the_document_information(tmp_path):
    """The PDF's Title entry becomes the parsed title."""
    path = _write(tmp_path, "t.pdf", make_pdf(["x"], title="Annual Report 2024"))
    assert _parse_pdf(path, tmp_path).title == "Annual Report 2024"


def test_markdown_splits_into_pages_at_headings(tmp_path):
    """Level-1 and level-2 headings start pages; the preamble joins the first
    section; deeper headings and headings inside code fences do not split."""
    text = (
        "Intro line.\n\n# Guide\n\nWelcome.\n\n### Detail\n\nStill page one.\n\n"
        "## Install\n\n```sh\n# not a heading\npip install quire\n```\n\n"
        "## Use\n\nRun it.\n"
    )
    path = _write(tmp_path, "guide.md", text.encode())
    parsed = parse_text(path, markdown=True, max_page_chars=10_000)
    assert [page.number for page in parsed.pages] == [1, 2, 3]
    assert parsed.pages[0].text.startswith("Intro line.")
    assert "Still page one." in parsed.pages[0].text
    assert "# not a heading" in parsed.pages[1].text
    assert parsed.pages[2].text == "## Use\n\nRun it."
    assert parsed.title == "Guide"


def test_plain_text_is_one_page_until_it_is_too_long(tmp_path):
    """Plain text is one logical page; text beyond the page size continues on
    the next page, cut at a paragraph break."""
    short = _write(tmp_path, "short.txt", b"one\n\ntwo\n")
    assert len(parse_text(short, markdown=False, max_page_chars=100).pages) == 1
    paragraphs = "\n\n".join(f"Paragraph {i} " + "x" * 40 for i in range(10))
    long = _write(tmp_path, "long.txt", paragraphs.encode())
    pages = parse_text(long, markdown=False, max_page_chars=120).pages
    assert len(pages) > 1
    assert all(len(page.text) <= 120 for page in pages)
    assert all(page.text.startswith("Paragraph") for page in pages)
    assert "".join(page.text for page in pages).count("Paragraph") == 10


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", "empty"),
        (b"  \n\t\n", "empty"),
        (b"\x00\x01\x02binary\x00", "not a text file"),
    ],
)
def test_unreadable_text_files_fail_with_a_reason(tmp_path, data, expected):
    """Empty, whitespace-only and binary "text" files are refused with a reason."""
    path = _write(tmp_path, "x.txt", data)
    with pytest.raises(UnreadableFile) as excinfo:
        parse_text(path, markdown=False, max_page_chars=1000)
    assert expected in excinfo.value.reason


def test_text_decoding_honours_boms_and_charsets():
    """A BOM wins, then the declared charset, then UTF-8, then Windows-1252."""
    assert decode_text("café".encode("utf-8-sig"), None) == "café"
    assert decode_text("café".encode("utf-16"), None) == "café"
    assert decode_text("café".encode("latin-1"), "iso-8859-1") == "café"
    assert decode_text("café".encode(), None) == "café"
    assert decode_text("café".encode("cp1252"), None) == "café"
    assert decode_text(b"plain", "no-such-charset") == "plain"


def test_parse_file_dispatches_on_content_type(tmp_path):
    """parse_file reads text/plain with parameters as plain text and Markdown by
    headings."""
    path = _write(tmp_path, "n.txt", "naïve text".encode("latin-1"))
    parsed = parse_file(path, "text/plain; charset=iso-8859-1", work_dir=tmp_path)
    assert parsed.pages[0].text == "naïve text"
    assert markdown_title("Title\n=====\n\ntext") == "Title"


def test_a_pdf_labelled_as_text_is_read_as_a_pdf(tmp_path):
    """Content that starts with a PDF header is parsed as a PDF whatever its
    declared type."""
    path = _write(tmp_path, "mislabelled.txt", make_pdf(["Real PDF text"]))
    parsed = parse_file(path, "text/plain", work_dir=tmp_path)
    assert parsed.pages[0].text == "Real PDF text"
    assert parsed.pages[0].image_path is not None


def test_long_text_splits_in_linear_time(tmp_path):
    """A large text without paragraph breaks still splits into bounded pages."""
    path = _write(tmp_path, "big.txt", b"word " * 400_000)
    pages = parse_text(path, markdown=False, max_page_chars=20_000).pages
    assert len(pages) == 100
    assert all(len(page.text) <= 20_000 for page in pages)


FIXTURES = Path(__file__).parent / "fixtures"


def test_utf16_html_with_a_bom_and_a_charset_meta_is_read(tmp_path):
    """Issue 22: a page Notepad saved as "Unicode" (UTF-16LE, a byte-order mark,
    `<meta ... charset=utf-16>`) was refused as "binary data" for its NUL
    bytes."""
    source = FIXTURES / "utf16le-bom-meta.html"
    assert source.read_bytes().startswith(b"\xff\xfe<\x00")
    parsed = parse_file(source, "text/html", work_dir=tmp_path)
    text = "\n".join(page.text for page in parsed.pages)
    assert "la crème brûlée coûte 4 €" in text
    assert "\x00" not in text and "\ufffd" not in text
    assert parsed.title == "Café de la gare"


def test_utf16_html_without_a_name_is_recognised_as_html(tmp_path):
    source = FIXTURES / "utf16le-bom-meta.html"
    with source.open("rb") as handle:
        assert resolve_content_type(None, "upload", handle) == formats.HTML


def test_html_meta_charset_decides_an_8bit_page(tmp_path):
    """A Windows-1252 page that says so in its <meta> reads as Windows-1252 (the
    bytes alone are not UTF-8, and a detector's guess is not the page's word)."""
    page = (
        '<html><head><meta charset="windows-1252"><title>Menu</title></head>'
        "<body><p>Crème brûlée — 4 € — served with a café au lait.</p>"
        "<p>Another paragraph so that the extractor keeps the body.</p></body></html>"
    ).encode("cp1252")
    path = _write(tmp_path, "menu.html", page)
    parsed = parse_file(path, "text/html", work_dir=tmp_path / "out")
    assert "Crème brûlée — 4 € — served with a café au lait." in parsed.pages[0].text


def test_html_binary_data_is_still_refused(tmp_path):
    path = _write(tmp_path, "page.html", b"<html>\x00\x01\x02\x00binary</html>")
    with pytest.raises(UnreadableFile, match="binary data"):
        parse_file(path, "text/html", work_dir=tmp_path / "out")


@pytest.mark.parametrize(
    ("data", "declared", "expected"),
    [
        (b"\xff\xfe<\x00h\x00", None, "utf-16"),
        (b"\xef\xbb\xbf<html>", "iso-8859-1", "utf-8-sig"),
        (b'<meta charset="ISO-8859-1"><p>', None, "latin_1"),
        (
            b'<meta http-equiv="content-type" content="text/html; charset=koi8-r">',
            None,
            "koi8_r",
        ),
        (b'<meta charset="utf-16"><p>no byte-order mark', None, "utf-8"),
        (b'<meta charset="latin-1">', "utf-8", "utf-8"),
        ('<meta charset="gb2312"><p>已存为 UTF-8'.encode(), None, "utf-8"),
        (b'<meta charset="no-such-thing">', None, None),
        (b"<html><p>nothing said", None, None),
    ],
)
def test_html_encoding_order_bom_declared_meta(data, declared, expected):
    found = formats.html_encoding(data, declared)
    assert _codec(found) == _codec(expected)


def _codec(name: str | None) -> str | None:
    return codecs.lookup(name).name if name else None


def test_a_file_without_headings_is_titled_by_its_first_line(tmp_path):
    """A text named like a file (markitdown__test.txt) whose first line stands
    alone as a title takes that line, not the file name; one that opens with
    a sentence gets no title from its text (ingestion then uses the name)."""
    path = _write(
        tmp_path,
        "markitdown__test.txt",
        b"Quarterly maintenance report\n\nThe fleet was inspected in May.\n",
    )
    assert parse_text(path, markdown=False, max_page_chars=10_000).title == (
        "Quarterly maintenance report"
    )
    prose = _write(tmp_path, "notes.txt", b"We met on Monday and agreed a plan.\n")
    assert parse_text(prose, markdown=False, max_page_chars=10_000).title == ""
