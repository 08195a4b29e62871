"""A key, then typing at the focus (ctrl+End to a document's end, then a line): the key's step is judged on the
screen before the first typed key, so its facts are ones a replay of the key alone can meet; the typing's facts are
the typed line's."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from PIL import Image, ImageDraw, ImageFont

from openadapt_flow.fixture.gestures import Gesture
from openadapt_flow.fixture.recorder import Batch, Recording
from openadapt_flow.record.compile import compile_bundle
from openadapt_flow.vision.diff import changed_fraction
from openadapt_flow.vision.ocr import OcrEngine

pytestmark = pytest.mark.timeout(90)
MONO = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
SCREEN = (1024, 768)
LINE, TOP, LEFT = 18, 40, 6
CLICK = (40, 49)  # on the first line's text


def editor(lines: list[str], caret: tuple[int, int]) -> np.ndarray:
    """A page of text with a caret at (line, column)."""
    im = Image.new("RGB", SCREEN, (0, 0, 0))
    d = ImageDraw.Draw(im)
    d.rectangle([0, 0, 599, 399], fill=(240, 240, 240))
    d.rectangle([0, 30, 599, 399], fill=(255, 255, 255))
    font = ImageFont.truetype(MONO, 14)
    for i, text in enumerate(lines):
        d.text((LEFT, TOP + i * LINE), text, font=font, fill=(0, 0, 0))
    line, col = caret
    x = LEFT + int(font.getlength("x" * col))
    d.rectangle([x, TOP + line * LINE - 1, x + 1, TOP + line * LINE + 15], fill=(0, 0, 0))
    return np.array(im)


def test_a_key_before_typing_is_judged_without_the_typed_text(tmp_path) -> None:
    start = editor(["Shopping list", ""], (0, 0))
    clicked = editor(["Shopping list", ""], (0, 4))
    at_end = editor(["Shopping list", ""], (1, 0))
    typed = editor(["Shopping list", "Patient: Maria Lopez"], (1, 20))
    click = [Gesture("press", *CLICK, key="click"), Gesture("click", *CLICK)]
    keys = [Gesture("key", key=c, char=c) for c in "Patient: Maria Lopez"]
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=start,
        batches=[
            Batch(before=start, lead=click, after=clicked),
            Batch(before=clicked, lead=[Gesture("key", key="ctrl+end")], edits=keys, mid=at_end, after=typed),
        ],
    )
    compile_bundle(rec, tmp_path / "b", "line", OcrEngine())
    steps = yaml.safe_load((tmp_path / "b" / "flow.yaml").read_text())["steps"]
    assert [s["action"] for s in steps] == ["click", "hotkey", "type"], steps
    key, line = steps[1], steps[2]
    for fact in key.get("expect", []):  # every fact of the key holds on the screen the key alone left
        assert "Patient" not in str(fact), fact
        if "region_changed" in fact:
            share = changed_fraction(clicked, at_end, tuple(fact["region_changed"]))
            assert share >= fact.get("changed_min", 0.0), (fact, share)
    assert line["text"] == "Patient: Maria Lopez" and line["append"] is True
