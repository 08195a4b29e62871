"""A toolbar icon kept as it was while the app's style turns dark (sqlitebrowser's appStyle=1).

The recorded crop is the New Record icon on a light toolbar; in the dark style the icon's pixels are the
same, the background around it is dark. Gray correlation fails, and so did the edge pass while edges
weighed by contrast (0.63 against 0.75) and the content check counted the restyled background. Real pixels:
tests/data/qtdark (a 1024x768 dark frame's toolbar strip, the recorded template).
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from openadapt_flow.bundle.models import Target
from openadapt_flow.ladder.ladder import Ladder

pytestmark = pytest.mark.timeout(60)

DATA = Path(__file__).resolve().parents[2] / "data" / "qtdark"
STRIP_TOP = 88  # the strip's row in the live 1024x768 frame
ICON_BOX = (412, 104, 32, 24)  # where the icon is in that frame (annotated)
RECORDED_REGION = (379, 98, 32, 24)


def rgb(name: str) -> np.ndarray:
    return cv2.cvtColor(cv2.imread(str(DATA / name)), cv2.COLOR_BGR2RGB)


def dark_frame(erase_icon: bool = False) -> np.ndarray:
    strip = rgb("dark-toolbar.png")
    frame = np.empty((768, 1024, 3), np.uint8)
    frame[:] = strip[1, 5]
    frame[STRIP_TOP : STRIP_TOP + strip.shape[0]] = strip
    if erase_icon:
        x, y, w, h = ICON_BOX
        frame[y : y + h, x : x + w] = frame[y, x - 2]  # the toolbar's own colour beside the icon
    return frame


def resolve(frame: np.ndarray):
    ladder = Ladder({"new-record.png": rgb("new-record.png")}, (1024, 768))
    return ladder.resolve(frame, Target(template="new-record.png", region=RECORDED_REGION))


def test_an_icon_unchanged_by_a_dark_restyle_is_found_by_its_edges() -> None:
    res = resolve(dark_frame())
    assert res.point is not None, res
    x, y, w, h = ICON_BOX
    assert x <= res.point[0] < x + w and y <= res.point[1] < y + h
    assert res.rung == "template-edges"


def test_the_dark_toolbar_without_that_icon_is_a_halt_not_a_neighbour() -> None:
    assert resolve(dark_frame(erase_icon=True)).point is None
