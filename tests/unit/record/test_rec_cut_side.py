"""A word at a target crop's side is dropped from the target's text only when the side cuts its glyphs
(record/compile.py `_cut_by_side`): a border running along the side past the word — FLTK's dotted focus ring
inside the default button — is no cut. flpsed's "Overwrite" button lost its name that way ("Click input 4"), and
with no text to find it by, a dark theme's replay had only its light template to go on."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from openadapt_flow.record.compile import _cut_by_side

BUTTON = Path(__file__).resolve().parents[2] / "data" / "fltk" / "flpsed-overwrite-button.png"


def test_a_dotted_focus_ring_along_the_side_does_not_cut_the_label() -> None:
    button = np.array(Image.open(BUTTON).convert("RGB"))  # the recorded crop: the ring on its left column
    h, w = button.shape[:2]
    assert not _cut_by_side(button, (0, 0, w, h), (0, 5, 72, 17))  # Tesseract's box of "Overwrite" takes in the ring


def _word(text: str) -> np.ndarray:
    im = Image.new("RGB", (160, 30), (192, 192, 192))
    ImageDraw.Draw(im).text(
        (20, 6), text, font=ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 14), fill=(0, 0, 0)
    )
    return np.array(im)


def test_a_glyph_cut_by_the_side_is_still_a_cut() -> None:
    frame = _word("Quit")
    ink = np.flatnonzero((frame[:, :, 0] < 100).any(axis=0))
    through = int(ink[-1]) - 2  # the crop's right side runs through the last glyph
    crop = (0, 0, through + 1, 30)
    assert _cut_by_side(frame, crop, (int(ink[0]), 6, through - int(ink[0]) + 1, 17))
