"""An icon button read by OCR as a stray mark (the edge of sqlitebrowser's New Record icon reads "|"): the mark is
neither the target's text (the OCR rung would look for "|") nor the step's name or intent ("Click |")."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from openadapt_flow.fixture.gestures import Gesture
from openadapt_flow.fixture.recorder import Batch, Recording
from openadapt_flow.record.compile import compile_bundle
from openadapt_flow.vision.ocr import OcrEngine, Word

pytestmark = pytest.mark.timeout(30)


class MarksOnly(OcrEngine):
    """Reads a single "|" wherever it is asked to read closely (what Tesseract makes of an icon's edge)."""

    def read_closely(self, image, box=None, like=None):  # type: ignore[override]
        x, y, w, h = box if box is not None else (0, 0, image.shape[1], image.shape[0])
        return [Word("|", 91.0, (x + w // 2, y + 2, 2, h - 4))]

    def read(self, image, box=None):  # type: ignore[override]
        return []


def icon_screen(pressed: bool) -> np.ndarray:
    f = np.full((200, 320, 3), 240, np.uint8)
    f[40:70, 100:140] = 200  # the button's face
    f[48:62, 112:128] = (40, 160, 40)  # its icon
    if pressed:
        f[120:160, 20:300] = 255  # the new row it added
    return f


def test_a_mark_read_on_an_icon_names_nothing(tmp_path):
    before, after = icon_screen(False), icon_screen(True)
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=before,
        batches=[
            Batch(before=before, lead=[Gesture("press", 120, 55, key="click"), Gesture("click", 120, 55)], after=after)
        ],
    )
    compile_bundle(rec, tmp_path / "b", "new-record", MarksOnly())
    (step,) = yaml.safe_load((tmp_path / "b" / "flow.yaml").read_text())["steps"]
    assert "text" not in step["target"]
    assert "|" not in step["intent"] and step["id"] == "click"
