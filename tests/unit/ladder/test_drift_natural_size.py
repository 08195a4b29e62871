"""A bigger screen with the application at its natural pixel size: recorded at 1024x768, replayed at 1920x1080.

A monitor or VNC geometry change usually leaves a window where it was and as big as it was (no window manager
rescales it), so the template rung must try the natural size (1.0) at the recorded pixel place, not only the
frame-size ratio at the scaled place. Frames: galculator (GTK), light and Adwaita:dark, whose window pixels
are the same on both screens (checked when the frames were captured).
"""

from __future__ import annotations

import numpy as np
import pytest

from openadapt_flow.bundle.models import Target
from openadapt_flow.ladder.ladder import Ladder
from openadapt_flow.vision.ocr import OcrEngine, Word

from .test_drift_stretched import RECORDED, SCREEN, WINDOW_AT, desktop, inside

pytestmark = pytest.mark.timeout(60)

BIG = (1920, 1080)
TARGETS = ("9", "7", "*", "+", "-", "6", "0")


class NoOcr(OcrEngine):
    """Fails the test if the ladder falls back to OCR: the template rung must resolve these."""

    def __init__(self) -> None:
        pass

    def read(self, image: np.ndarray, box: tuple[int, int, int, int] | None = None) -> list[Word]:
        raise AssertionError("the template rung should have resolved this without OCR")


def on_big_screen(name: str) -> np.ndarray:
    small = desktop(name)
    frame = np.zeros((BIG[1], BIG[0], 3), np.uint8)
    frame[: SCREEN[1], : SCREEN[0]] = small  # the window stays at WINDOW_AT, at its own pixel size
    return frame


def ladder() -> Ladder:
    rec = desktop("recorded")
    crops = {label: rec[y : y + h, x : x + w].copy() for label, (x, y, w, h) in RECORDED.items()}
    return Ladder(crops, SCREEN, ocr=NoOcr())


@pytest.mark.parametrize("theme, rung", [("recorded", "template"), ("dark", "template-edges")])
def test_natural_size_on_a_bigger_screen_is_found_by_the_template_rung_at_the_recorded_place(
    theme: str, rung: str
) -> None:
    lad, live = ladder(), on_big_screen(theme)
    assert WINDOW_AT == (100, 100)
    for label in TARGETS:
        res = lad.resolve(live, Target(template=label, region=RECORDED[label]))
        assert res.ok and res.point is not None, (label, res.message)
        assert inside(res.point, RECORDED[label]), (label, res.point)  # the same pixels as recorded
        assert res.rung == rung
        assert res.evidence[-1].scale == 1.0
        search = res.evidence[-1].search
        assert search is not None and search[2] < 400 and search[3] < 400  # a window, not the whole frame


def test_a_scaled_screen_is_still_found_at_the_scaled_place() -> None:
    # The other ordinary case: the whole session scaled with the screen (a scaled remote desktop).
    import cv2

    lad, s = ladder(), 1.25
    live = cv2.resize(desktop("recorded"), (round(SCREEN[0] * s), round(SCREEN[1] * s)), interpolation=cv2.INTER_LINEAR)
    for label in ("9", "+"):
        res = lad.resolve(live, Target(template=label, region=RECORDED[label]))
        x, y, w, h = RECORDED[label]
        assert res.ok and res.point is not None, (label, res.message)
        assert inside(res.point, (round(x * s), round(y * s), round(w * s), round(h * s))), (label, res.point)
        assert res.evidence[-1].scale == pytest.approx(s, abs=0.01)


@pytest.mark.parametrize("theme, rung", [("recorded", "template"), ("dark", "template-edges")])
def test_a_window_moved_beyond_the_search_window_is_found_on_the_whole_frame_without_ocr(theme: str, rung: str) -> None:
    # Adwaita:dark keeps the layout and inverts the label against the face but not the borders: no plain
    # correlation survives it, and every keypad button is the same shape in edges: only the content (the
    # label) tells them apart, and it must, without OCR and without clicking a neighbour.
    dx, dy = 150, 110  # past the 80 px window around each recorded place
    window = desktop(theme)[WINDOW_AT[1] : WINDOW_AT[1] + 343, WINDOW_AT[0] : WINDOW_AT[0] + 331]
    live = np.zeros_like(desktop(theme))
    live[WINDOW_AT[1] + dy : WINDOW_AT[1] + dy + 343, WINDOW_AT[0] + dx : WINDOW_AT[0] + dx + 331] = window
    lad = ladder()
    for label in TARGETS:
        res = lad.resolve(live, Target(template=label, region=RECORDED[label]))
        x, y, w, h = RECORDED[label]
        assert res.ok and res.point is not None, (label, res.message)
        assert inside(res.point, (x + dx, y + dy, w, h)), (label, res.point, res.evidence[-1])
        assert res.rung == rung
