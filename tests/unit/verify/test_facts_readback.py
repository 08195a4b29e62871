"""Reading a typed value back: from the crop of the edited cell, with one tolerance for words and numbers."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from openadapt_flow.verify.readback import shows
from openadapt_flow.verify.screen import ScreenChecks
from openadapt_flow.vision.ocr import OcrEngine

pytestmark = pytest.mark.timeout(60)
DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
CELL = (60, 100, 150, 30)  # x, y, w, h of the edited cell
POINT = (130, 115)  # where the type step clicked


def grid(cell_text: str = "", row_number: str = "3") -> np.ndarray:
    """A table row: its row number in a header column, the edited cell, the next cell; 1 px borders."""
    im = Image.new("RGB", (640, 300), (250, 250, 250))
    d = ImageDraw.Draw(im)
    f = ImageFont.truetype(DEJAVU, 15)
    x, y, w, h = CELL
    d.rectangle([20, y, x, y + h], fill=(230, 230, 230), outline=(160, 160, 160))
    d.text((x - 2 - d.textlength(row_number, font=f), y + 7), row_number, font=f, fill=(20, 20, 20))
    d.rectangle([x, y, x + w, y + h], fill=(255, 255, 255), outline=(160, 160, 160))
    d.rectangle([x + w, y, x + w + 150, y + h], fill=(255, 255, 255), outline=(160, 160, 160))
    d.text((x + w + 6, y + 7), "Cardiology", font=f, fill=(20, 20, 20))
    if cell_text:
        d.text((x + 2, y + 7), cell_text, font=f, fill=(20, 20, 20))
    return np.array(im)


@pytest.fixture(scope="module")
def checks() -> ScreenChecks:
    return ScreenChecks(OcrEngine(), {})


def band() -> tuple[int, int, int, int]:
    return (POINT[0] - 200, POINT[1] - 30, 600, 60)


def test_a_misread_letter_is_not_the_typed_name(checks: ScreenChecks) -> None:
    got = checks.readback(grid("2arol Nguyen"), grid(), "Carol Nguyen", band(), POINT)
    assert not got.ok, got.detail


def test_an_elided_cell_reads_back_as_the_start_of_the_value(checks: ScreenChecks) -> None:
    got = checks.readback(grid("Carol Nguy…"), grid(), "Carol Nguyen Smith", band(), POINT)
    assert got.ok, got.detail


def test_the_value_is_read_in_its_cell_not_merged_with_the_row_number(checks: ScreenChecks) -> None:
    # read across the row, Tesseract makes one word of the row number, the border and the name: "12|Carol"
    got = checks.readback(grid("Carol Nguyen", row_number="12"), grid(row_number="12"), "Carol Nguyen", band(), POINT)
    assert got.ok and "the field" in got.detail, got.detail
    assert got.evidence["at"][0] >= CELL[0]


def test_a_wrong_digit_fails_as_a_wrong_letter_does(checks: ScreenChecks) -> None:
    assert not checks.readback(grid("1250.60"), grid(), "1250.50", band(), POINT).ok


@pytest.mark.parametrize(
    "typed,read,ok",
    [
        ("Carol Nguyen", "Carol Nguyen", True),
        ("Carol Nguyen", "carol nguyen|", True),  # case, a border read as a bar
        ("Carol Nguyen", "2arol Nguyen]", False),  # one letter wrong is a wrong value, however long
        ("1250.50", "125O.5O", True),  # look-alike glyphs, the same for numbers as for words
        ("Olson", "0lson", True),
        ("1250.50", "1250.5", False),
        ("12", "12.0", False),
        ("Carol Nguyen", "Carol …", True),  # elided by the cell: its start
        ("Carol Nguyen", "Ca…", False),  # too little shown to tell
        ("Carol Nguyen", "Carl …", False),
        ("1250.50", "125…", True),
        ("Carol Nguyen", "Carol Nguyen,", True),  # a cell's edge read as a comma
        ("-12", "12", False),  # a sign is part of the number
        ("Nguyen", "Carol Nguyen", False),  # replacing, the field holds exactly the value
    ],
)
def test_one_tolerance_for_words_and_numbers(typed: str, read: str, ok: bool) -> None:
    assert shows(typed, read) is ok


@pytest.mark.parametrize(
    "typed,read,ok",
    [
        ("Zürich Müller", "Zirich Miller", True),  # what the OCR model cannot read stands for one character
        ("Zürich Müller", "Zrich Miller", False),  # a character missing is still caught
        ("Zürich Müller", "Zirich Milley", False),  # and every ASCII one is still proven
        ("Ωmega", "Qmega", True),
        ("Ωmega", "Qmegb", False),
    ],
)
def test_a_character_outside_what_ocr_reads_matches_one_character_at_its_place(typed: str, read: str, ok: bool) -> None:
    assert shows(typed, read) is ok
