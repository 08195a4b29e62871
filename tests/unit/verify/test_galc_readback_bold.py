"""A value typed into galculator's display is read back there: its bold digits, which the screen reading (local
contrast, sparse text) returns as '' or '. th', are read as one line of plain grey; the rule stays exact. Real
frames (tests/data/galculator): the recording's display before and after typing 12, a replay's before and after 56."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from openadapt_flow.verify.screen import ScreenChecks
from openadapt_flow.vision.mask import field_band
from openadapt_flow.vision.ocr import OcrEngine

pytestmark = pytest.mark.timeout(120)
DATA = Path(__file__).resolve().parents[2] / "data" / "galculator"
DISPLAY = (160, 57)  # where the demonstration clicked the display


def frame(name: str) -> np.ndarray:
    return np.array(Image.open(DATA / f"{name}.png").convert("RGB"))


@pytest.fixture(scope="module")
def checks() -> ScreenChecks:
    return ScreenChecks(OcrEngine(), {})


@pytest.mark.parametrize(
    "before,after,typed", [("typed-before", "typed-12", "12"), ("typed-56-before", "typed-56-halt", "56")]
)
def test_a_value_typed_into_a_bold_display_is_read_back(checks, before, after, typed) -> None:
    got = checks.readback(frame(after), frame(before), typed, field_band(DISPLAY), DISPLAY)
    assert got.ok, got.detail


@pytest.mark.parametrize(
    "after,typed",
    [
        ("typed-12", "13"),
        ("typed-12", "1"),
        ("typed-12", "2"),
        ("typed-12", "21"),
        ("typed-12", "120"),
        ("typed-56-halt", "12"),
        ("typed-56-halt", "5"),
    ],
)
def test_the_bold_display_reading_accepts_only_the_exact_value(checks, after, typed) -> None:
    got = checks.readback(frame(after), frame("typed-before"), typed, field_band(DISPLAY), DISPLAY)
    assert not got.ok, got.detail


def test_a_display_that_still_shows_its_old_value_is_no_readback(checks) -> None:
    """The keys never arrived: the display shows 0, not the 12 typed."""
    got = checks.readback(frame("typed-before"), frame("typed-before"), "12", field_band(DISPLAY), DISPLAY)
    assert not got.ok
