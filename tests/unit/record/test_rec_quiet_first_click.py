"""A first click that changed nothing in the recording (on the cell or field already selected: a spreadsheet opens
with A1 selected, and a person clicks A1 to start there) is checked for what it still shows, as a later step that
changed nothing is; the weak "the screen changes where it acted" would halt every replay of it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from openadapt_flow.fixture.gestures import Gesture
from openadapt_flow.fixture.recorder import Batch, Recording
from openadapt_flow.record.compile import compile_bundle
from openadapt_flow.vision.ocr import OcrEngine

pytestmark = pytest.mark.timeout(60)
DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def sheet(selected_row: int, typed: str = "") -> np.ndarray:
    """A grid of cells with a header 'patient', the selected cell framed in blue."""
    im = Image.new("RGB", (640, 400), (255, 255, 255))
    d = ImageDraw.Draw(im)
    f = ImageFont.truetype(DEJAVU, 16)
    for r in range(8):
        for c in range(4):
            d.rectangle([40 + c * 140, 40 + r * 30, 180 + c * 140, 70 + r * 30], outline=(200, 200, 200))
    d.text((48, 46), "patient", font=f, fill=(16, 16, 16))
    d.text((48, 76), "Ada Lovelace", font=f, fill=(16, 16, 16))
    if typed:
        d.text((48, 106), typed, font=f, fill=(16, 16, 16))
    y = 40 + selected_row * 30
    d.rectangle([40, y, 180, y + 30], outline=(20, 40, 160), width=2)
    return np.array(im)


def test_a_first_click_that_changed_nothing_checks_what_it_still_shows(tmp_path: Path) -> None:
    f0 = sheet(0)  # the header cell is already selected: clicking it changes nothing
    f1 = sheet(2)  # ctrl+down, down: the first empty cell
    f2 = sheet(2, "Grace Hopper")
    click = [Gesture("press", 110, 55, key="click"), Gesture("click", 110, 55)]
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=f0,
        batches=[
            Batch(before=f0, lead=click, after=f0.copy()),
            Batch(before=f0, lead=[Gesture("key", key="ctrl+down")], after=f1),
            Batch(before=f1, lead=[], edits=[Gesture("key", key=c, char=c) for c in "Grace Hopper"], after=f2),
        ],
    )
    out = compile_bundle(rec, tmp_path / "b", "quiet-click", OcrEngine())
    first = out.steps[0]
    assert first["action"] == "click" and "target" in first, first
    assert first.get("expect"), f"verified only by a change that never comes: {first}"
    (fact,) = first["expect"]
    assert fact.get("relative_to") == "target", fact  # placed by the clicked cell, wherever the window is
    assert not any(f"step {first['id']!r}" in w and "verified only weakly" in w for w in out.warnings), out.warnings
