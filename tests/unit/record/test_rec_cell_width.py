"""A typed table cell's template is what the cell shows, not the cell's width (issue 35, the corpus's halts): a
table sizes its columns from the data and the window as they come up, so a replay's name column can be narrower
than the recording's. A template cut border to border (the whole cell) then fits the cell no more (DB Browser for
SQLite, window moved: best 0.70 below 0.75, the replay halted `ambiguous`). Cut to the cell's content (a new
record's NULL) with its column's header as the landmark, the cell is found at any width; two cells reading alike
are told apart by the header, by a clear margin, as before."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from PIL import Image

from openadapt_flow.bundle.loader import load_bundle
from openadapt_flow.fixture.gestures import Gesture
from openadapt_flow.fixture.recorder import Batch, Recording
from openadapt_flow.ladder.ladder import Ladder
from openadapt_flow.record.compile import compile_bundle
from openadapt_flow.vision.ocr import OcrEngine
from tests.support.screens import Canvas, font

pytestmark = pytest.mark.timeout(120)
ROW_Y, ROW_H, LEFT = 150, 30, 40


def table(name_w: int, clinic_w: int = 140, name: str = "NULL", clinic: str = "NULL") -> np.ndarray:
    """A header row (name, clinic) and one new record's row of two cells, the name column `name_w` px wide; the new
    row selected (white on blue, small: what OCR reads least surely)."""
    c = Canvas()
    cells = ((LEFT, name_w, "name", name), (LEFT + name_w, clinic_w, "clinic", clinic))
    for x, w, header, value in cells:
        c.draw.rectangle([x, 100, x + w - 1, 129], fill=(225, 225, 225), outline=(170, 170, 170))
        c.text(x + w // 2 - 22, 104, header, size=18)
        c.draw.rectangle([x, ROW_Y, x + w - 1, ROW_Y + ROW_H - 1], fill=(48, 140, 198), outline=(170, 170, 170))
        c.draw.text((x + 5, ROW_Y + 9), value, fill=(255, 255, 255), font=font(11))
    return c.array()


@pytest.mark.parametrize("narrow", [130, 90])  # 90: the clinic cell's NULL comes into the recorded place's window
def test_a_typed_cell_is_found_when_its_column_comes_up_narrower_than_recorded(tmp_path, narrow) -> None:
    empty, typed = table(200), table(200, name="Grace")
    click = (LEFT + 100, ROW_Y + ROW_H // 2)  # the middle of the name cell, as a person clicks it
    rec = Recording(url="vnc://h:1", settle_s=0.3, initial=empty, sor_kind="sqlite", batches=[
        Batch(before=empty, lead=[Gesture("press", *click, key="click"), Gesture("click", *click)],
              edits=[Gesture("key", key=ch, char=ch) for ch in "Grace"], mid=empty, after=typed),
        Batch(before=typed, lead=[Gesture("key", key="ctrl+s")], after=typed,
              writes=[("patients", {"id": 1, "name": "Grace", "clinic": None})])])
    compile_bundle(rec, tmp_path / "b", "cell", OcrEngine(), dsn_env="DB")
    bundle = load_bundle(tmp_path / "b")
    step = bundle.model.steps[0]
    assert step.action == "type" and step.target is not None and step.target.landmarks
    rgb = np.array(Image.open(tmp_path / "b" / step.target.template).convert("RGB"))
    ladder = Ladder({step.target.template: rgb}, (640, 480), OcrEngine())

    narrower = table(narrow, clinic_w=340 - narrow)  # the name column came up narrower at this launch
    res = ladder.resolve(narrower, step.target)
    assert res.point is not None, [e.detail for e in res.evidence]
    x, y = res.point
    assert LEFT <= x < LEFT + narrow and ROW_Y <= y < ROW_Y + ROW_H, res.point  # inside the name cell, never clinic's

    same = table(200)  # as recorded: still found, in the name cell
    res = ladder.resolve(same, step.target)
    assert res.point is not None and LEFT <= res.point[0] < LEFT + 200, [e.detail for e in res.evidence]
    doc = yaml.safe_load((tmp_path / "b" / "flow.yaml").read_text())
    (lm,) = doc["steps"][0]["target"]["landmarks"]
    assert lm["text"] == "name" and lm["column"] is True
