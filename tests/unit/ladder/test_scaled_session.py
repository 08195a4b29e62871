"""A session drawn 25 % bigger (fonts and icons at 1.25, Drift(scale=1.25)) on the recorded screen size.

The app draws its labels and icons anew at the bigger size, crisp; the recorded crop enlarged to 1.25 is a
smeared picture of them. Compared pixel for pixel, the right widget's content scored 0.65-0.66 (sqlitebrowser's
New Record icon's top border; galculator's "3"), below CONTENT_FULL: its rank fell under the threshold and the
replay halted, while a look-alike (Delete Record: the same table, another badge) scored as high. A few blocks are
now compared at the crop's recorded resolution (`vision.content`), and of two scales at one place the better-ranked
is kept. Real pixels: tests/data/scale125
(frames captured just before the step at 1.25) and the recorded templates (tests/data/qtdark/new-record.png, the
galculator "3" key).
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from openadapt_flow.bundle.models import Target
from openadapt_flow.imaging import pixels
from openadapt_flow.ladder.ladder import Ladder, Resolution
from openadapt_flow.vision.content import RESCUE_SHARE, as_recorded, rescuable
from openadapt_flow.vision.template import FrameFeatures, TemplateImage, detail_score

pytestmark = pytest.mark.timeout(60)

DATA = Path(__file__).resolve().parents[2] / "data"
SCREEN = (1024, 768)
# (template, recorded region, live frame, where the target is in that frame (annotated), a look-alike's box)
SQLB = ("qtdark/new-record.png", (379, 98, 32, 24), "scale125/sqlitebrowser-1.25.png", (485, 125, 26, 26))
SQLB_DELETE = (525, 125, 26, 26)  # Delete Record: the same table icon with another badge
GALC = ("scale125/galculator-button-3.png", (137, 265, 57, 31), "scale125/galculator-1.25.png", (154, 276, 68, 34))
GALC_MINUS = (228, 236, 68, 34)  # the "-" key, a key of the same shape


def rgb(name: str) -> np.ndarray:
    return cv2.cvtColor(cv2.imread(str(DATA / name)), cv2.COLOR_BGR2RGB)


def resolve(case: tuple, frame: np.ndarray) -> Resolution:
    template, region, _, _ = case
    ladder = Ladder({"t.png": rgb(template)}, SCREEN)
    return ladder.resolve(frame, Target(template="t.png", region=region))


def inside(point: tuple[int, int] | None, box: tuple[int, int, int, int]) -> bool:
    x, y, w, h = box
    return point is not None and x <= point[0] < x + w and y <= point[1] < y + h


def paint(frame: np.ndarray, box: tuple[int, int, int, int], patch: np.ndarray | None = None) -> np.ndarray:
    """`frame` with `box` covered by `patch`, or by the colour just left of it (the target erased)."""
    out = frame.copy()
    x, y, w, h = box
    out[y : y + h, x : x + w] = out[y + h // 2, x - 2] if patch is None else patch
    return out


@pytest.mark.parametrize("case", [SQLB, GALC], ids=["sqlitebrowser-icon", "galculator-key"])
def test_a_target_drawn_at_1_25_is_found_where_it_is(case: tuple) -> None:
    res = resolve(case, rgb(case[2]))
    assert inside(res.point, case[3]), res
    win = res.winning
    assert win is not None and win.runner_up is not None and win.rank is not None
    assert win.rank - win.runner_up >= 0.05, win  # a clear winner, not a near tie


def test_the_icon_erased_is_a_halt_not_its_look_alike() -> None:
    """With New Record gone, Delete Record (the same table, another badge) is the best likeness left."""
    res = resolve(SQLB, paint(rgb(SQLB[2]), SQLB[3]))
    assert res.point is None, res
    assert not inside(res.point, SQLB_DELETE)


def test_the_key_erased_is_a_halt_not_another_key() -> None:
    res = resolve(GALC, paint(rgb(GALC[2]), (170, 282, 36, 22)))  # the "3" glyph painted over, the key left
    assert res.point is None, res


def test_two_copies_at_1_25_stay_a_tie() -> None:
    """The "3" key copied over the "-" key: the rank the content check now grants both is the same, so the
    margin rule (SPEC: two candidates within the margin are ambiguous) still refuses to pick."""
    frame = rgb(GALC[2])
    x, y, w, h = GALC[3]
    res = resolve(GALC, paint(frame, GALC_MINUS, frame[y : y + h, x : x + w]))
    assert res.point is None and res.category == "ambiguous", res


def test_as_recorded_carries_what_an_enlarged_crop_can_show() -> None:
    """A crisp one-pixel stroke drawn at 1.25 and the same stroke recorded at 1 and enlarged correlate poorly;
    seen at the recorded resolution they agree. At scale 1 or below nothing changes."""
    recorded = np.full((24, 24), 240, np.uint8)
    recorded[6, 4:20] = 40  # a one-pixel border, as icons have
    recorded[12:14, 8:16] = 90
    live = np.full((30, 30), 240, np.uint8)
    live[7, 5:25] = 40  # the app draws it again at 1.25: still one pixel, crisp
    live[15:17, 10:20] = 90
    enlarged = pixels.resize(recorded, (30, 30), "linear")

    def corr(a: np.ndarray, b: np.ndarray) -> float:
        return float(np.corrcoef(a.astype(np.float64).ravel(), b.astype(np.float64).ravel())[0, 1])

    assert corr(as_recorded(live, 1.25), enlarged) > corr(live, enlarged) + 0.05
    assert all(as_recorded(live, s) is live for s in (0.8, 1.0))


def test_a_small_label_is_never_judged_coarsely() -> None:
    """Coarsely, galculator's "*" is a blob like the "9" key's (0.79); at full detail it is not (0.63). A one-block
    crop gets no coarse look (drift corpus "twin": keys stretched, the "9" key fits the 1.25 crop's frame)."""
    frame = FrameFeatures(rgb("drift/galculator/twin-main.png"))
    star = TemplateImage(rgb("drift/galculator/crops/btn-times.png"))
    assert len(star.blocks(1.25)) < RESCUE_SHARE and rescuable(len(star.blocks(1.25)), 1.25) == 0
    assert detail_score(frame, star, (200, 207, 71, 39), 1.25) < 0.7
    assert rescuable(5, 1.25) == 1 and rescuable(5, 1.1) == 0  # one block in four, and only from SMEARED_FROM
