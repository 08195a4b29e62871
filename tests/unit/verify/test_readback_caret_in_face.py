"""A text typed into a multi-line text view (a translation editor's pane) clicked in its empty part, under its first
line: the text goes to the first line, out of the band around the click, and the view's caret, a 1 px bar one column
after the last glyph, merges into it ("travail|" read "travaill"). The caret is painted out of the field's face too,
not only out of what the typing changed inside the band (which holds nothing here). Real Tesseract on the pane as
poedit (wxGTK 3) drew it (tests/data/carets/wxgtk-poedit-bar-against-l.png: its pane, 900x140, at y=530 of the
1024x768 screen), set on the window's grey."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from openadapt_flow.verify.screen import ScreenChecks
from openadapt_flow.vision.ocr import OcrEngine

pytestmark = pytest.mark.timeout(120)
PANE = Path(__file__).resolve().parents[2] / "data" / "carets" / "wxgtk-poedit-bar-against-l.png"
TOP = 530  # the crop's row on the screen
TEXT_ROWS = (14, 40)  # the pane's first line, in the crop: the typed text and its caret
CLICK = (300, 600)  # where the typing clicked: the empty part of the pane, ~50 px under its first line
BAND = (100, 570, 600, 60)  # the readback band around the click: it misses the first line
TYPED = "Sauvegarder le travail"


def screen(crop: np.ndarray) -> np.ndarray:
    frame = np.full((768, 1024, 3), 240, np.uint8)
    frame[TOP : TOP + crop.shape[0], : crop.shape[1]] = crop
    return frame


@pytest.fixture(scope="module")
def frames() -> tuple[np.ndarray, np.ndarray]:
    typed = np.asarray(Image.open(PANE).convert("RGB")).copy()
    empty = typed.copy()
    empty[TEXT_ROWS[0] : TEXT_ROWS[1], :600] = 255  # the pane before the typing: plain white
    return screen(typed), screen(empty)


@pytest.fixture(scope="module")
def checks() -> ScreenChecks:
    return ScreenChecks(OcrEngine(), {})


def test_a_caret_against_the_last_glyph_is_painted_out_of_the_field_face(checks: ScreenChecks, frames) -> None:
    after, before = frames
    got = checks.readback(after, before, TYPED, BAND, CLICK, append=True)
    assert got.ok, got.detail
    assert "text cursor" in got.detail, got.detail
    x, y, w, h = got.evidence["at"]
    assert TOP + TEXT_ROWS[0] <= y and y + h <= TOP + TEXT_ROWS[1], got.evidence  # on the pane's first line


@pytest.mark.parametrize("expected", ["Sauvegarder le travai", "Sauvegarder la travail"])
def test_another_text_is_still_not_read_back_with_the_caret_painted_out(
    checks: ScreenChecks, frames, expected: str
) -> None:
    after, before = frames
    got = checks.readback(after, before, expected, BAND, CLICK, append=True)
    assert not got.ok, got.detail
