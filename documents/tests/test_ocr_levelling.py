"""Which way a page's lines run and how far they lean, and the measures OCR is
judged by: no Tesseract needed, so these run with the fast tests."""

import pytest
from PIL import Image, ImageDraw

from documents.ingestion.accuracy import lines_lost, page_variant, word_recall
from documents.ingestion.reader.ocr import Levelling, levelling

BILL = """Date Description Number Debits Credits Balance
31Jul2018 Balance Forward 99,878.08 -
01Aug2018 Clearing Cheque 4987 36.07 99,914.15 -"""


def _page() -> Image.Image:
    """A page of 24 lines of dark bars of varying length, as text lines look
    to a projection profile."""
    page = Image.new("L", (1200, 1600), 255)
    draw = ImageDraw.Draw(page)
    for row in range(24):
        top = 150 + row * 55
        for word in range(9):
            left = 120 + word * 105
            width = 60 + (row * 7 + word * 13) % 35
            draw.rectangle((left, top, left + width, top + 22), fill=0)
    return page


@pytest.mark.parametrize(
    ("variant", "vertical", "skew"),
    [
        ("upright", False, 0.0),
        ("turned 90", True, 0.0),
        ("turned 270", True, 0.0),
        ("skewed +10", False, -10.0),
        ("skewed -10", False, 10.0),
    ],
)
def test_levelling_finds_the_lines_direction_and_skew(variant, vertical, skew):
    level = levelling(page_variant(_page(), variant))
    assert level.sure and level.vertical == vertical
    found = level.column_skew if vertical else level.row_skew
    assert found == pytest.approx(skew, abs=0.3)


def test_a_page_without_clear_lines_is_tried_every_way_round():
    assert Levelling(vertical=False, sure=True).tries() == [0, 180]
    assert Levelling(vertical=True, sure=True).tries() == [90, 270]
    assert Levelling(vertical=False, sure=False).tries() == [0, 180, 90, 270]


def test_lines_lost_counts_missing_rows_not_misread_digits():
    read = BILL.replace("31Jul2018 Balance Forward 99,878.08 -\n", "")
    assert lines_lost(read, BILL) == ["31Jul2018 Balance Forward 99,878.08 -"]
    assert lines_lost(BILL.replace("01Aug2018", "Q1Aug2018"), BILL) == []
    assert lines_lost(BILL, BILL) == []


def test_word_recall_counts_repeated_words():
    assert word_recall("the cat", "the cat the dog") == 0.5
    assert word_recall("The CAT", "the cat") == 1.0
