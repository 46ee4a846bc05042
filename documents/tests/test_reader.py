"""The reader child: OCR, its settings and limits, unusable text layers."""

from pathlib import Path

import pypdfium2 as pdfium
import pytest
from PIL import Image, ImageDraw, ImageFont

from documents.ingestion.accuracy import (
    character_error_rate,
    lines_lost,
    page_variant,
    word_recall,
)
from documents.ingestion.context import marked_headings
from documents.ingestion.parsers import parse_file, reader_limits

PDFS = Path(__file__).resolve().parents[3] / "shared" / "data" / "pdfs"
OCR = Path(__file__).resolve().parents[3] / "shared" / "data" / "office" / "ocr"


@pytest.fixture(autouse=True)
def _small_images(settings):
    settings.PAGE_IMAGE_WIDTH = 160


def _parse(path: Path, tmp_path: Path, content_type: str = "application/pdf"):
    return parse_file(path, content_type, work_dir=tmp_path)


def test_scanned_pages_are_read_by_ocr(shared_data, tmp_path):
    """A scanned page gets its text from OCR, marked as such, with line boxes
    in the page's fractions."""
    parsed = _parse(PDFS / "scanned/ocrmypdf__linn.pdf", tmp_path)
    (page,) = parsed.pages
    assert page.ocr and "LinnSequencer" in page.text
    assert page.lines and all(0 <= v <= 1 for line in page.lines for v in line[2:6])
    assert parsed.title == "The LinnSequencer"
    assert parsed.status_note() == ""


def test_an_ocr_pages_tall_lines_are_marked_as_headings(tmp_path):
    """On a page read by OCR, a line clearly taller than the body lines is a
    heading (its line entry carries a level, as a PDF's larger type does);
    the body lines are not."""
    page = Image.new("L", (1700, 1100), 255)
    draw = ImageDraw.Draw(page)
    draw.text(
        (100, 80), "Propagation of Ferns", font=ImageFont.load_default(72), fill=0
    )
    body = [
        "Each frond carries small brown dots on its underside.",
        "These dots are the sporangia, which hold the spores.",
        "Sow the spores on damp peat and keep them covered.",
        "The young plants appear after some weeks in shade.",
        "Move them to pots once they have two or three fronds.",
    ]
    font = ImageFont.load_default(36)
    for number, line in enumerate(body):
        draw.text((100, 260 + 70 * number), line, font=font, fill=0)
    path = tmp_path / "ferns.png"
    page.save(path, dpi=(200, 200))
    (read,) = _parse(path, tmp_path, "image/png").pages
    assert read.ocr and "sporangia" in read.text
    marked = [read.text[start:end] for start, end, _ in marked_headings(read.lines)]
    assert marked == ["Propagation of Ferns"]


def test_ocr_can_be_turned_off(shared_data, tmp_path, settings):
    """With OCR_ENABLED off a scan keeps its image and no text, and the note
    says why."""
    settings.OCR_ENABLED = False
    parsed = _parse(PDFS / "scanned/ocrmypdf__linn.pdf", tmp_path)
    (page,) = parsed.pages
    assert not page.ocr and not page.has_text and page.image_path
    note = parsed.status_note()
    assert "No extractable text" in note and "OCR is turned off" in note


def test_ocr_pages_per_document_are_limited(shared_data, tmp_path, settings):
    """Past OCR_MAX_PAGES, pages are kept without text and the note names the
    setting."""
    settings.OCR_MAX_PAGES = 1
    parsed = _parse(PDFS / "scanned/ocrmypdf__multipage.pdf", tmp_path)
    assert sum(page.ocr for page in parsed.pages) == 1
    assert "OCR_MAX_PAGES" in parsed.status_note()


def test_an_unusable_text_layer_is_not_stored(shared_data, tmp_path, settings):
    """Characters from a font without a Unicode map are not stored as text: with
    OCR off the page is left without text, and the note says why."""
    settings.OCR_ENABLED = False
    parsed = _parse(PDFS / "misc/ocrmypdf__type3_font_nomapping.pdf", tmp_path)
    assert parsed.pages[0].text == ""
    assert "fonts without a Unicode map" in parsed.status_note()


@pytest.mark.parametrize(
    ("name", "upright"),
    [
        ("tesseract-test__phototest-rotated-R.png", False),
        ("derived__tesseract-test-phototest-skew5deg.png", True),
        ("tesseract.js__simple-180.jpg", True),
    ],
)
def test_turned_and_skewed_pages_read_upright(shared_data, tmp_path, name, upright):
    """Pages turned by 90 or 180 degrees, or skewed, read as the upright page;
    their line boxes stay in the orientation of the stored image (a page turned
    by 90 degrees has tall, narrow lines)."""
    content_type = "image/png" if name.endswith(".png") else "image/jpeg"
    parsed = _parse(OCR / name, tmp_path, content_type)
    (page,) = parsed.pages
    truth = (OCR / name).with_name(name.rsplit(".", 1)[0] + ".groundtruth.txt")
    assert " ".join(page.text.split()) == " ".join(truth.read_text().split())
    x0, y0, x1, y1 = page.lines[0][2:]
    assert (x1 - x0 > y1 - y0) == upright


def test_reader_limits_follow_the_settings(settings):
    """The image budget grows with the file (bytes per byte, with a floor)."""
    settings.PAGE_IMAGE_BYTES_PER_INPUT_BYTE = 8.0
    settings.PAGE_IMAGE_MIN_BUDGET_BYTES = 1000
    assert reader_limits(10).image_budget_bytes == 1000
    assert reader_limits(1_000_000).image_budget_bytes == 8_000_000


def test_every_frame_of_a_multi_page_tiff_is_a_page(shared_data, tmp_path):
    """A multi-page TIFF becomes one page per frame, each with its image and its
    text read by OCR."""
    page = Image.open(OCR / "tesseract-test__phototest.tif").convert("L")
    path = tmp_path / "two-pages.tif"
    page.save(path, save_all=True, append_images=[page.rotate(180)])
    work = tmp_path / "work"
    work.mkdir()
    parsed = parse_file(path, "image/tiff", work_dir=work)
    assert [p.number for p in parsed.pages] == [1, 2]
    for parsed_page in parsed.pages:
        assert parsed_page.ocr and parsed_page.image_path.exists()
        assert "quick brown dog" in parsed_page.text


def test_a_table_row_under_a_dashed_rule_is_not_lost(shared_data, tmp_path):
    """Issue 22: the bill's first row, drawn just under the dashed rule of its
    header, was found by the layout but read as nothing, so "31Jul2018 Balance
    Forward 99,878.08" was missing from the page text."""
    parsed = _parse(OCR / "tesseract.js__bill.png", tmp_path, "image/png")
    (page,) = parsed.pages
    truth = (OCR / "tesseract.js__bill.groundtruth.txt").read_text()
    assert "31Jul2018 Balance Forward 99,878.08" in page.text
    assert "Q1Aug2018" not in page.text
    assert lines_lost(page.text, truth) == []
    assert character_error_rate(page.text, truth) <= 0.01
    # The recovered row has a line box of its own, where the row is drawn.
    (box,) = [
        line[2:]
        for line in page.lines
        if page.text[line[0] : line[1]].startswith("31Jul")
    ]
    assert 0.3 < box[1] < box[3] < 0.45


def _shared_page(name: str):
    """The first page of a shared OCR document as an image, and its text."""
    if name.endswith(".pdf"):
        source = PDFS / "scanned" / name
        document = pdfium.PdfDocument(source)
        image = document[0].render(scale=300 / 72, grayscale=True).to_pil()
        document.close()
    else:
        source = OCR / name
        image = Image.open(source)
    truth = source.with_name(source.name.rsplit(".", 1)[0] + ".groundtruth.txt")
    return image, truth.read_text(encoding="utf-8").split("\f")[0]


@pytest.mark.parametrize(
    ("name", "variant"),
    [
        ("tesseract-test__phototest.tif", "turned 90"),
        ("tesseract-test__eurotext.tif", "turned 270"),
        ("tesseract-test__eurotext.tif", "skewed -10"),
        ("tesseract.js__bill.png", "skewed +10"),
        ("ocrmypdf__linn.pdf", "turned 180"),
        ("ocrmypdf__linn.pdf", "skewed +10"),
    ],
)
def test_pages_of_several_documents_read_turned_and_skewed(
    shared_data, tmp_path, settings, name, variant
):
    """Issue 22: orientation and skew fitted to one page (phototest) read other
    pages turned by 90 degrees or skewed by 10 as noise. Pages of four shared
    documents (prose, a multilingual page, a table, a scanned PDF), turned or
    skewed, read as well as upright."""
    settings.OCR_PAGE_TIMEOUT = 300  # a loaded machine is no reason to skip a page
    image, truth = _shared_page(name)
    path = tmp_path / "page.png"
    page_variant(image, variant).save(path, dpi=image.info.get("dpi", (300, 300)))
    work = tmp_path / "work"
    work.mkdir()
    (page,) = parse_file(path, "image/png", work_dir=work).pages
    assert character_error_rate(page.text, truth) <= 0.05, page.text
    # eurotext upright reads 89% of its words with English alone (no accents).
    assert word_recall(page.text, truth) >= 0.85
