"""Facts that can hold twice (issue 35, finding 2): a fact is a word of three or more letters that the demonstration
did not type, stable across two recorded frames. Not `a`; not a run folder's random name read from a save dialog
(it is part of a typed path); not a tooltip's text that was there only while the pointer rested."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from PIL import Image, ImageDraw, ImageFont

from openadapt_flow.fixture.gestures import Gesture
from openadapt_flow.fixture.recorder import Batch, Recording
from openadapt_flow.record.compile import compile_bundle
from openadapt_flow.record.facts import readable, result_fact
from openadapt_flow.vision.ocr import OcrEngine, Word

pytestmark = pytest.mark.timeout(60)
DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
PATH = "/tmp/run-x7k2qz/notes.txt"


def w(text: str) -> Word:
    return Word(text, 96.0, (10, 10, 40, 12))


class _Reads:
    """An OCR that reads what it is told for each frame (by the frame's top-left pixel)."""

    def __init__(self, words: dict[int, list[Word]]) -> None:
        self.words = words

    def read_closely(self, frame, area=None):
        return self.words.get(int(frame[0, 0, 0]), [])


def test_a_one_letter_word_is_no_fact_nor_a_result() -> None:
    assert readable([w("a"), w("Al"), w("Saved")], []) == [w("Saved")]
    before, after = np.zeros((60, 80, 3), np.uint8), np.zeros((60, 80, 3), np.uint8)
    after[0, 0, 0], after[10:22, 10:50] = 1, 200
    for shown, wanted in (("a", None), ("|l", None), ("7", "7"), ("Done", "Done")):
        fact = result_fact(before, after, _Reads({1: [w(shown)]}), {}, [], set())
        assert (fact.text if fact else None) == wanted, (shown, fact)


def test_a_folder_name_that_is_part_of_a_typed_path_is_no_fact() -> None:
    # the save dialog lists the run folder (read alone, or glued to its label) before the path is typed into it
    assert readable([w("run-x7k2qz"), w("Folder:x7k2qz"), w("Documents")], [PATH]) == [w("Documents")]


def frame(status: str = "Ready", tip: str | None = None, result: str = "") -> np.ndarray:
    im = Image.new("RGB", (640, 360), (238, 238, 238))
    d = ImageDraw.Draw(im)
    f = ImageFont.truetype(DEJAVU, 18)
    d.rectangle([20, 20, 600, 70], fill=(255, 255, 255), outline=(90, 90, 90))
    d.text((30, 32), result, font=f, fill=(0, 0, 0))
    d.rectangle([40, 120, 160, 160], fill=(210, 210, 210), outline=(90, 90, 90))
    d.text((70, 130), "Equals", font=f, fill=(0, 0, 0))
    if tip:  # a tooltip beside the button the pointer rests on
        d.rectangle([170, 165, 420, 195], fill=(255, 255, 210), outline=(0, 0, 0))
        d.text((178, 170), tip, font=f, fill=(0, 0, 0))
    d.text((20, 320), status, font=f, fill=(0, 0, 0))
    return np.array(im)


def test_a_tooltip_that_came_up_while_the_pointer_rested_is_no_gone_fact(tmp_path) -> None:
    start = frame(status="")
    checked = frame()  # the screen the click was checked on: no tooltip yet
    rested = frame(tip="Compute result")  # the pointer rested on the button; the tooltip came up by itself
    after = frame(result="Math error")  # Enter: the tooltip went away, and the display changed
    click = [Gesture("press", 100, 140, key="click"), Gesture("click", 100, 140)]
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=start,
        batches=[
            Batch(before=start, lead=click, after=checked, later=rested),
            Batch(before=rested, lead=[Gesture("key", key="enter")], after=after),
        ],
    )
    out = compile_bundle(rec, tmp_path / "b", "calc", OcrEngine())
    enter = yaml.safe_load((out.path / "flow.yaml").read_text())["steps"][1]
    assert not any("text_absent" in f for f in enter.get("expect", [])), enter
    assert any(f.get("text_present") in ("Math", "error") for f in enter["expect"]), enter
