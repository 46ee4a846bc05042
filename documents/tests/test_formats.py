"""Recognising uploads by content first, then declared type, then extension."""

import html
import io
import zipfile
from importlib import import_module
from pathlib import Path

import pytest
from django.urls import reverse

from documents.ingestion import formats
from documents.ingestion.formats import Refused, resolve_content_type
from documents.ingestion.reader import __main__ as reader_main
from documents.ingestion.reading import ReaderLimits, child_request
from documents.tests.fixtures import make_pdf

_LIMITS = ReaderLimits(
    image_width=100,
    max_pages=1,
    timeout=1.0,
    memory_mb=256,
    page_render_timeout=1.0,
    image_budget_bytes=1,
    unpacked_budget_bytes=1,
    ocr_enabled=False,
    ocr_languages="eng",
    ocr_max_pages=0,
    ocr_page_timeout=1.0,
    text_page_chars=1000,
    child_max_files=1,
    child_max_bytes=1,
)

DOCX = formats.DOCX


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _ole(stream: str) -> bytes:
    """A minimal OLE compound file holding one small stream named `stream`."""
    import olefile  # noqa: F401  (the reader side; writing is done by hand)

    sector = 512
    header = bytearray(sector)
    header[0:8] = formats.OLE_MAGIC
    header[0x18:0x1A] = (0x3E).to_bytes(2, "little")  # minor version
    header[0x1A:0x1C] = (3).to_bytes(2, "little")  # major version 3
    header[0x1C:0x1E] = (0xFFFE).to_bytes(2, "little")  # little endian
    header[0x1E:0x20] = (9).to_bytes(2, "little")  # sector size 2**9
    header[0x20:0x22] = (6).to_bytes(2, "little")  # mini sector size 2**6
    header[0x2C:0x30] = (1).to_bytes(4, "little")  # one FAT sector
    header[0x30:0x34] = (1).to_bytes(4, "little")  # directory starts at sector 1
    header[0x38:0x3C] = (4096).to_bytes(4, "little")  # mini stream cutoff
    header[0x3C:0x40] = (0xFFFFFFFE).to_bytes(4, "little")  # no mini FAT
    header[0x44:0x48] = (0xFFFFFFFE).to_bytes(4, "little")  # no DIFAT sectors
    header[0x4C:0x50] = (0).to_bytes(4, "little")  # the FAT is sector 0
    for index in range(1, 109):
        header[0x4C + 4 * index : 0x50 + 4 * index] = b"\xff\xff\xff\xff"
    fat = bytearray(b"\xff\xff\xff\xff" * (sector // 4))
    fat[0:4] = (0xFFFFFFFD).to_bytes(4, "little")  # sector 0: the FAT itself
    fat[4:8] = (0xFFFFFFFE).to_bytes(4, "little")  # sector 1: end of directory
    directory = bytearray(sector)

    def entry(slot: int, name: str, kind: int, child: int = 0xFFFFFFFF) -> None:
        raw = name.encode("utf-16-le") + b"\x00\x00"
        base = slot * 128
        directory[base : base + len(raw)] = raw
        directory[base + 0x40 : base + 0x42] = len(raw).to_bytes(2, "little")
        directory[base + 0x42] = kind
        directory[base + 0x43] = 1  # black
        directory[base + 0x44 : base + 0x48] = b"\xff\xff\xff\xff"
        directory[base + 0x48 : base + 0x4C] = b"\xff\xff\xff\xff"
        directory[base + 0x4C : base + 0x50] = child.to_bytes(4, "little")
        directory[base + 0x74 : base + 0x78] = (0xFFFFFFFE).to_bytes(4, "little")

    entry(0, "Root Entry", 5, child=1)
    entry(1, stream, 2)
    return bytes(header + fat + directory)


@pytest.mark.parametrize(
    ("content_type", "filename", "expected"),
    [
        ("application/pdf", "a.pdf", formats.PDF),
        ("Application/PDF; name=a.pdf", "a.pdf", formats.PDF),
        ("application/x-pdf", "a.bin", formats.PDF),
        ("text/plain; charset=UTF-8", "notes.txt", "text/plain; charset=utf-8"),
        ("TEXT/PLAIN", "notes", "text/plain"),
        ("text/markdown; charset=utf-8", "a.md", "text/markdown; charset=utf-8"),
        ("text/x-markdown", "a.txt", "text/markdown"),
        ("text/plain", "README.md", "text/markdown"),
        ("application/octet-stream", "paper.PDF", formats.PDF),
        (None, "guide.markdown", "text/markdown"),
        ("", "notes.txt", "text/plain"),
        ("text/html; charset=UTF-8", "page.html", "text/html; charset=utf-8"),
        ("application/octet-stream", "page.htm", formats.HTML),
        ("application/octet-stream", "report.docx", DOCX),
        ("application/zip", "deck.pptx", formats.PPTX),
        (None, "sheet.xlsx", formats.XLSX),
        (None, "book.epub", formats.EPUB),
        ("image/jpg", "scan.jpg", formats.JPEG),
        (None, "scan.tiff", formats.TIFF),
        ("image/png", "scan.png", formats.PNG),
    ],
)
def test_declared_types_ignore_case_and_parameters(content_type, filename, expected):
    """Every supported type is recognised from its content type whatever the case
    and parameters; uninformative types fall back to the file's extension."""
    assert resolve_content_type(content_type, filename) == expected


@pytest.mark.parametrize(
    ("content_type", "filename"),
    [
        ("application/octet-stream", "archive.zip"),
        (None, "no-extension"),
        ("video/mp4", "clip.mp4"),
        ("application/x-msdownload", "setup.exe"),
    ],
)
def test_unsupported_types_resolve_to_none(content_type, filename):
    """Types Quire does not take resolve to None."""
    assert resolve_content_type(content_type, filename) is None


@pytest.mark.parametrize(
    ("content_type", "filename", "named"),
    [
        ("application/vnd.ms-word", "letter.doc", ".doc"),
        ("application/octet-stream", "budget.XLS", ".xls"),
        ("application/vnd.ms-powerpoint", "talk", ".ppt"),
    ],
)
def test_legacy_office_types_are_refused_by_name(content_type, filename, named):
    """A legacy binary Office file is refused with a reason naming its format
    and what to save it as."""
    with pytest.raises(Refused) as caught:
        resolve_content_type(content_type, filename)
    assert named in caught.value.reason and "save it as" in caught.value.reason


@pytest.mark.parametrize(
    ("data", "filename", "declared", "expected"),
    [
        (
            _zip({"[Content_Types].xml": b"<Types/>", "word/document.xml": b"<w/>"}),
            "no-extension",
            None,
            DOCX,
        ),
        (
            _zip({"[Content_Types].xml": b"<Types/>", "word/document.xml": b"<w/>"}),
            "deck.pptx",
            formats.PPTX,
            DOCX,
        ),
        (
            _zip({"[Content_Types].xml": b"wordprocessingml", "word/x.xml": b""}),
            "strict",
            None,
            DOCX,
        ),
        (
            _zip({"mimetype": b"application/epub+zip", "content.opf": b""}),
            "book",
            "application/octet-stream",
            formats.EPUB,
        ),
        (make_pdf(["hello"]), "page.html", "text/html", formats.PDF),
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 20, "x.txt", "text/plain", formats.PNG),
        (b"\xff\xd8\xff\xe0" + b"\x00" * 20, "photo", None, formats.JPEG),
        (b"II*\x00" + b"\x00" * 20, "scan", None, formats.TIFF),
        (b"<!DOCTYPE html><html><body>hi</body></html>", "page", None, formats.HTML),
        (b"just some words", "notes", None, formats.PLAIN_TEXT),
    ],
)
def test_content_decides_over_name_and_declared_type(
    data, filename, declared, expected
):
    """The bytes decide the format when they can: a DOCX without an extension
    is a DOCX, a DOCX named .pptx too, a PDF sent as HTML is a PDF."""
    assert resolve_content_type(declared, filename, io.BytesIO(data)) == expected


@pytest.mark.parametrize(
    ("stream", "named"),
    [("WordDocument", ".doc"), ("Workbook", ".xls"), ("PowerPoint Document", ".ppt")],
)
def test_legacy_office_content_is_refused_whatever_its_name(stream, named):
    """An OLE container holding a legacy Word, Excel or PowerPoint stream is
    refused by name, even when it is named .docx."""
    with pytest.raises(Refused) as caught:
        resolve_content_type(None, "renamed.docx", io.BytesIO(_ole(stream)))
    assert named in caught.value.reason


def test_encrypted_office_content_keeps_its_declared_type():
    """A password-protected OOXML file (an OLE container with an encrypted
    package) keeps its declared Office type, so that ingestion can say it is
    encrypted; without one, the upload is refused as encrypted."""
    data = _ole("EncryptedPackage")
    assert resolve_content_type(None, "a.xlsx", io.BytesIO(data)) == formats.XLSX
    with pytest.raises(Refused) as caught:
        resolve_content_type(None, "secret", io.BytesIO(data))
    assert "encrypted" in caught.value.reason


# The one format table holds: each format has its reader, its words and its
# page model, and every place that lists formats shows each of them.


@pytest.mark.parametrize("fmt", formats.FORMATS, ids=lambda fmt: fmt.label)
def test_every_format_in_the_table_has_a_reader_and_a_description(fmt):
    """The reader the table names exists in the reader package and is what the
    child is told to run; the format has its words, its name in sentences, its
    page model and a way to be recognised (extensions, at least)."""
    module, _, function = fmt.reader.rpartition(".")
    reader = getattr(import_module(f"documents.ingestion.reader.{module}"), function)
    assert callable(reader)
    request = child_request(
        Path("/tmp/x"), fmt.content_type, work_dir=Path("/tmp"), limits=_LIMITS
    )
    assert request["reader"] == fmt.reader
    assert request["format_name"] == fmt.name
    assert fmt.label and fmt.name.startswith(("a ", "an ")) and fmt.pages
    assert fmt.extensions and all(ext.startswith(".") for ext in fmt.extensions)
    for extension in fmt.extensions:
        assert formats.declared_type(None, f"file{extension}") == fmt.content_type
    assert formats.describe(fmt.content_type) == fmt.name


def test_the_table_has_one_entry_per_type_and_extension():
    types = [fmt.content_type for fmt in formats.FORMATS]
    extensions = [ext for fmt in formats.FORMATS for ext in fmt.extensions]
    assert len(types) == len(set(types))
    assert len(extensions) == len(set(extensions))


def test_the_reader_package_keeps_no_list_of_formats():
    """The child's dispatch is the table's: no content type is spelled in the
    reader's entry point."""
    source = Path(reader_main.__file__).read_text()
    for fmt in formats.FORMATS:
        assert fmt.content_type not in source


@pytest.mark.django_db
def test_the_home_page_and_the_upload_form_show_every_format(
    client, admin_client, make_channel
):
    channel = make_channel("handbook")
    home = client.get("/").text
    upload = admin_client.get(
        reverse("admin:documents_document_upload"), {"channel": channel.pk}
    ).text
    for fmt in formats.FORMATS:
        assert html.escape(fmt.label) in home, fmt.label
        assert html.escape(fmt.label) in upload, fmt.label
