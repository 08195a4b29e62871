"""A region_changed fact the compiler keeps must have changed clearly on the recorded screen, not just past the
replay's least share: gnome-text-editor's Enter moved the caret a line down and put a modified mark in the title,
300 px apart; the box around both changed by 0.0022 of its pixels on one recording (0.0020 on another). Kept, it
halted the replay of a longer document (the caret a line lower, out of the box: 0.0015)."""

from __future__ import annotations

import numpy as np
import pytest

from openadapt_flow.record.facts import Fact
from openadapt_flow.record.proof import fact_check, proven
from openadapt_flow.vision.ocr import OcrEngine

pytestmark = pytest.mark.timeout(60)
BOX = (17, 18, 266, 85)  # the caret's old and new places and the title's mark, far apart


def frames(marks: int) -> tuple[np.ndarray, np.ndarray]:
    """An editor's page before and after a step that drew `marks` short strokes (17 px each) inside BOX."""
    before = np.full((400, 640, 3), 250, np.uint8)
    after = before.copy()
    for i in range(marks):
        after[80:97, 20 + 10 * i] = 40
    return before, after


def keep(before: np.ndarray, after: np.ndarray, ocr: OcrEngine) -> tuple[list[Fact], list[str]]:
    warned: list[str] = []
    fact = Fact("region_changed", None, BOX)
    kept = proven(
        [fact],
        lambda f, paired: {"region_changed": list(f.region)},
        lambda doc: fact_check(doc, before, after, ocr, {}, {}),
        lambda f: f,
        warned.append,
    )
    return kept, warned


def test_an_area_that_barely_changed_on_the_recording_is_no_fact() -> None:
    ocr = OcrEngine()
    before, after = frames(3)  # 51 px of 22610: 0.0023, past the replay's 0.002 by a hair
    assert fact_check({"region_changed": list(BOX)}, before, after, ocr, {}, {}).ok  # it does hold there
    kept, warned = keep(before, after, ocr)
    assert kept == [] and "barely changed" in warned[0], warned


def test_an_area_that_clearly_changed_stays_a_fact() -> None:
    before, after = frames(12)  # 204 px: 0.009
    kept, warned = keep(before, after, OcrEngine())
    assert [f.kind for f in kept] == ["region_changed"] and warned == []
