"""A box drawn tight around typed text (the text object being edited: flpsed's, on FLTK 1.3) is painted out before
the readback reads the text again, as a caret or a squiggle is, and what is read is held to the same exact rule.
Real Tesseract on a real frame: flpsed at zoom 125 showed "Rosa Diaz" in its box, read back as "‘osa Diaz)"."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from openadapt_flow.verify.screen import ScreenChecks
from openadapt_flow.vision.ocr import OcrEngine
from openadapt_flow.vision.outline import without_outline

pytestmark = pytest.mark.timeout(120)
DATA = Path(__file__).resolve().parents[2] / "data" / "outline"
BAND = (6, 19, 600, 60)  # the readback band in the crop (the recorded one, moved with it)
POINT = (206, 49)  # where the typing clicked, in the crop


def frame(name: str) -> np.ndarray:
    return np.array(Image.open(DATA / f"flpsed-zoom125-{name}.png").convert("RGB"))


@pytest.fixture(scope="module")
def checks() -> ScreenChecks:
    return ScreenChecks(OcrEngine(), {})


def test_typed_text_in_a_tight_box_reads_back_exactly(checks: ScreenChecks) -> None:
    got = checks.readback(frame("typed"), frame("before"), "Rosa Diaz", BAND, POINT, append=True)
    assert got.ok, got.detail
    assert "the box drawn around the text" in got.detail, got.detail


@pytest.mark.parametrize("typed", ["Rosa Dias", "Rosa Diaz Ruiz", "Ros Diaz"])
def test_another_value_than_the_boxed_text_still_fails(checks: ScreenChecks, typed: str) -> None:
    got = checks.readback(frame("typed"), frame("before"), typed, BAND, POINT, append=True)
    assert not got.ok, got.detail


def drawn(box: bool, underline: bool = False) -> np.ndarray:
    im = Image.new("RGB", (110, 40), (255, 255, 255))
    d = ImageDraw.Draw(im)
    d.text(
        (12, 10),
        "Rosa Diaz",
        font=ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 15),
        fill=(0, 0, 0),
    )
    if box:
        d.rectangle([10, 8, 96, 29], outline=(0, 0, 0))
    if underline:
        d.line([(10, 29), (96, 29)], fill=(0, 0, 0))
    return np.array(im)


def test_the_box_is_found_and_only_its_sides_are_painted() -> None:
    found = without_outline(drawn(box=True))
    assert found is not None
    clean, (x, y, w, h) = found
    assert (x, y, w, h) == (10, 8, 87, 22)
    assert (clean[8, 10:97] == 255).all() and (clean[29, 10:97] == 255).all()  # top and bottom gone
    assert (clean[8:30, 10] == 255).all() and (clean[8:30, 96] == 255).all()  # the sides gone
    assert (clean[12:27, 14:94] < 128).any()  # the text is kept


@pytest.mark.parametrize("underline", [False, True])
def test_text_without_a_closed_box_has_no_outline(underline: bool) -> None:
    assert without_outline(drawn(box=False, underline=underline)) is None
