"""`OcrEngine.read_line`: one line read from the plain grey image, dark text on light whatever the theme; the screen
reading (`read`) of galculator's bold display digits returns nothing useful."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from openadapt_flow.vision.ocr import OcrEngine

pytestmark = pytest.mark.timeout(60)
DATA = Path(__file__).resolve().parents[2] / "data" / "galculator"
DISPLAY_FACE = (9, 34, 313, 48)  # inside galculator's display box (recorded layout)


@pytest.fixture(scope="module")
def twelve() -> np.ndarray:
    return np.array(Image.open(DATA / "typed-12.png").convert("RGB"))


def test_bold_display_digits_are_read_as_a_line(twelve) -> None:
    ocr = OcrEngine()
    assert "12" not in [w.text for w in ocr.read(twelve, DISPLAY_FACE)]  # why a line reading is needed
    assert [w.text for w in ocr.read_line(twelve, DISPLAY_FACE)] == ["12"]


def test_light_digits_on_a_dark_display_are_read_the_same(twelve) -> None:
    words = OcrEngine().read_line(255 - twelve, DISPLAY_FACE)
    assert [w.text for w in words] == ["12"]
    x, y, w, h = words[0].box
    assert DISPLAY_FACE[0] <= x and x + w <= DISPLAY_FACE[0] + DISPLAY_FACE[2]  # in image coordinates


def test_a_number_whose_bold_digits_read_as_letters_is_still_found() -> None:
    """galculator's "1904" reads "DOG," on the screen reading: nothing like the number, so `find` must look at the
    doubtful big word again for a number whatever it first read as (a replay checking a shown param's result)."""
    display = np.array(Image.open(DATA / "display-1904.png").convert("RGB"))
    ocr = OcrEngine()
    assert "1904" not in [w.text for w in ocr.read(display)]  # why a second look is needed
    assert [m.text for m in ocr.find(display, "1904")] == ["1904"]
