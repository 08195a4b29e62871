"""A real FOX editor (Xfe's xfwrite) moved out of the window the template rung searches first.

Recorded at (0, 0) of a 1024x768 desktop: a click on the blank page below the text, its crop a narrow strip from the
toolbar's lower edge down into the page. Replayed with the window at (150, 120), farther than the rung's padding: the
strip is whole (score 1.0) outside the first window, while inside it the strip shrunk to 0.8 lies on the toolbar's
edge in edge maps (0.89, above the edge threshold). That likeness was judged unique on the whole frame at its own
scale only, where the real strip does not show, and won: the click landed 112 px left and 49 px up of where it was
meant, and every `relative_to: target` fact of the steps after it was looked for outside the window.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from openadapt_flow.bundle.models import Target
from openadapt_flow.ladder.ladder import Ladder

pytestmark = pytest.mark.timeout(60)

WINDOW = Path(__file__).resolve().parents[2] / "data" / "ladder" / "xfwrite" / "window.png"
SCREEN = (1024, 768)
STRIP = (304, 42, 32, 270)  # the recorded crop: toolbar edge and blank page, clicked at (320, 300)
CLICK = (16, 258)


def desktop(at: tuple[int, int]) -> np.ndarray:
    window = cv2.cvtColor(cv2.imread(str(WINDOW)), cv2.COLOR_BGR2RGB)
    frame = np.zeros((SCREEN[1], SCREEN[0], 3), np.uint8)
    frame[at[1] : at[1] + window.shape[0], at[0] : at[0] + window.shape[1]] = window
    return frame


def strip_ladder() -> tuple[Ladder, Target]:
    x, y, w, h = STRIP
    crop = np.ascontiguousarray(desktop((0, 0))[y : y + h, x : x + w])
    return Ladder({"templates/01.png": crop}, SCREEN), Target(template="templates/01.png", region=STRIP, point=CLICK)


def test_a_likeness_in_the_window_loses_to_the_whole_crop_elsewhere_on_the_frame() -> None:
    ladder, target = strip_ladder()
    res = ladder.resolve(desktop((150, 120)), target)
    assert res.point == (320 + 150, 300 + 120), (res.point, res.message, [e.detail for e in res.evidence])
    likeness = next(e for e in res.evidence if e.rung == "template-edges")
    assert likeness.verdict == "miss" and "the frame holds a better match" in likeness.detail, likeness.detail


def test_the_strip_at_its_recorded_place_still_hits_there() -> None:
    ladder, target = strip_ladder()
    res = ladder.resolve(desktop((0, 0)), target)
    assert res.point == (320, 300) and res.rung == "template", res.message
