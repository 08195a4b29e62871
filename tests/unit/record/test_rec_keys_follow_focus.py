"""Keys act where the focus is, and the replay places a key step's facts from the last target it found (the runtime's
focus), however many keys came between: ctrl+s after Enter after typing into a cell opens a dialog over the same
window, so the dialog's words are read where the moved window shows them, not at recorded screen pixels."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from PIL import Image, ImageDraw, ImageFont

from openadapt_flow.fixture.gestures import Gesture
from openadapt_flow.fixture.recorder import Batch, Recording
from openadapt_flow.record.compile import compile_bundle
from openadapt_flow.vision.ocr import OcrEngine

pytestmark = pytest.mark.timeout(60)
DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def screen(value: str = "", committed: bool = False, dialog: bool = False) -> np.ndarray:
    im = Image.new("RGB", (640, 400), (240, 240, 240))
    d = ImageDraw.Draw(im)
    f = ImageFont.truetype(DEJAVU, 16)
    d.rectangle([50, 100, 250, 126], fill=(255, 255, 255), outline=(90, 90, 90))
    if value:
        d.text((56, 104), value, font=f, fill=(16, 16, 16))
    if not committed:
        d.rectangle([51, 101, 249, 125], outline=(50, 120, 200), width=2)  # the cell's editor is open
    if dialog:
        d.rectangle([200, 180, 600, 300], fill=(200, 200, 200), outline=(60, 60, 60))
        d.text((220, 200), "Keep the current format?", font=ImageFont.truetype(DEJAVU, 18), fill=(0, 0, 0))
    return np.array(im)


def test_a_key_after_keys_places_its_facts_from_the_last_target(tmp_path):
    empty, typed = screen(), screen("Grace Hopper")
    committed, asked = screen("Grace Hopper", committed=True), screen("Grace Hopper", committed=True, dialog=True)
    rec = Recording(url="vnc://h:1", settle_s=0.3, initial=empty, batches=[
        Batch(before=empty, lead=[Gesture("press", 150, 112, key="click"), Gesture("click", 150, 112)],
              edits=[Gesture("key", key=c, char=c) for c in "Grace Hopper"], after=typed),
        Batch(before=typed, lead=[Gesture("key", key="enter")], after=committed),
        Batch(before=committed, lead=[Gesture("key", key="ctrl+s")], after=asked),
    ])
    compile_bundle(rec, tmp_path / "b", "save", OcrEngine())
    steps = yaml.safe_load((tmp_path / "b" / "flow.yaml").read_text())["steps"]
    save = steps[-1]
    assert save["keys"] == ["ctrl", "s"] and "target" not in steps[-2], steps
    words = [f for f in save.get("expect", []) if "text_present" in f]
    assert words, save  # the dialog's word is the step's fact
    assert all(f.get("relative_to") == "target" for f in words), save
