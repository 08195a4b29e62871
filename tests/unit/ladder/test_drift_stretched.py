"""A real GTK calculator (galculator) whose window was stretched: its buttons grow, their labels do not.

Recorded at 1024x768 with the window at (100, 100); replayed with the window resized. No template then
matches both a button's outline and its label, and single-glyph labels look alike ("9" and "4", "+" and
")"), so a look-alike may never be clicked because the real button's content scored lower: the rung must
halt, or click the right button.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from openadapt_flow.bundle.models import Target
from openadapt_flow.ladder.ladder import Ladder
from openadapt_flow.ladder.template_rung import TemplateRung
from openadapt_flow.vision.template import Candidate, MatchResult, TemplateImage

pytestmark = pytest.mark.timeout(60)

DATA = Path(__file__).resolve().parents[2] / "data" / "ladder" / "galculator"
SCREEN = (1024, 768)
WINDOW_AT = (100, 100)
Box = tuple[int, int, int, int]


def desktop(name: str) -> np.ndarray:
    """The saved window pasted where it was on the (black) 1024x768 desktop."""
    window = cv2.cvtColor(cv2.imread(str(DATA / f"{name}.png")), cv2.COLOR_BGR2RGB)
    frame = np.zeros((SCREEN[1], SCREEN[0], 3), np.uint8)
    x, y = WINDOW_AT
    frame[y : y + window.shape[0], x : x + window.shape[1]] = window
    return frame


def grid(cols: list[tuple[int, int]], rows: list[tuple[int, int]]) -> dict[str, Box]:
    """Button boxes by label, from the column and row spans of the keypad."""
    labels = [["7", "8", "9", "/"], ["4", "5", "6", "*"], ["1", "2", "3", "-"], ["0", ".", "+/-", "+"]]
    return {
        labels[r][c]: (x0, y0, x1 - x0, y1 - y0)
        for r, (y0, y1) in enumerate(rows)
        for c, (x0, x1) in enumerate(cols[:4])
    }


RECORDED = grid([(106, 165), (171, 230), (236, 295), (301, 360)], [(283, 317), (323, 357), (363, 397), (403, 437)])
STRETCHED = {
    "stretched-400x380": grid(
        [(106, 178), (185, 257), (264, 336), (343, 415)], [(291, 332), (339, 379), (386, 426), (433, 473)]
    ),
    "stretched-560x500": grid(
        [(106, 210), (217, 321), (328, 432), (439, 543)], [(315, 380), (387, 451), (458, 522), (529, 593)]
    ),
}
TARGETS = ("9", "7", "*", "+", "-", "6")


def inside(point: tuple[int, int], box: Box) -> bool:
    x, y, w, h = box
    return x <= point[0] < x + w and y <= point[1] < y + h


def ladder() -> Ladder:
    rec = desktop("recorded")
    return Ladder({label: rec[y : y + h, x : x + w].copy() for label, (x, y, w, h) in RECORDED.items()}, SCREEN)


@pytest.mark.parametrize("frame", sorted(STRETCHED))
def test_a_stretched_keypad_never_gets_a_click_on_another_button(frame: str) -> None:
    lad, live, truth = ladder(), desktop(frame), STRETCHED[frame]
    for label in TARGETS:
        res = lad.resolve(live, Target(template=label, region=RECORDED[label]))
        if res.ok:
            assert res.point is not None and inside(res.point, truth[label]), (label, res.point, res.evidence)
        else:
            assert res.category in ("resolution", "ambiguous")


def test_the_unstretched_keypad_still_resolves_every_button() -> None:
    lad, live = ladder(), desktop("recorded")
    for label in TARGETS:
        res = lad.resolve(live, Target(template=label, region=RECORDED[label]))
        assert res.ok and res.point is not None and inside(res.point, RECORDED[label]), (label, res.evidence)
        assert res.rung == "template"


def test_a_near_tie_is_ambiguous_whatever_content_the_runner_up_shows() -> None:
    # One margin on one rank: a runner-up whose shape is as good and whose content is only a little weaker
    # (still "plausible" or not) is a rival, not "a different widget".
    tmpl = TemplateImage(desktop("recorded")[323:357, 301:360].copy())
    rung = TemplateRung({"t": tmpl})
    best = Candidate(0.839, (301, 323, 59, 34), 1.0, detail=0.95)
    for runner_content in (0.95, 0.78, 0.76):
        runner = Candidate(0.836, (236, 283, 59, 34), 1.0, detail=runner_content)
        result = MatchResult(best, runner, (0, 0, *SCREEN), "edges", 0.6)
        ev = rung.judge(result, Target(template="t", region=(301, 323, 59, 34)), tmpl, 1.0)
        assert ev.verdict == "ambiguous" and ev.point is None, (runner_content, ev)
        assert "different widget" not in ev.detail
