"""A moved app whose small labels a whole-frame read misses (GTK's and galculator's at 1x: `make realapps`, window
moved) still passes its start check: the words are read again in one window where the app now is — placed by the
words that were found, or by the first step's target found on the whole frame (its template, unique by TIE_MARGIN).
A label that is not there still fails, and a target with a twin places nothing."""

from __future__ import annotations

import numpy as np
import pytest

from openadapt_flow.bundle.models import StartFact
from openadapt_flow.verify.screen import ScreenChecks
from openadapt_flow.verify.start import judge_start
from openadapt_flow.vision.ocr import TextMatch, Word, find_text
from openadapt_flow.vision.template import TemplateImage

pytestmark = pytest.mark.timeout(60)

LABELS = {"Patient": (353, 352, 44, 9), "Clinic": (352, 390, 36, 11)}  # recorded boxes
FIELD = (349, 342, 151, 30)  # the first step's target (the patient field), recorded region


class WindowOnlyOcr:
    """Reads the drawn labels only in a window (a box of at most 300 x 300): a whole-frame read misses them."""

    def __init__(self, words: list[Word]) -> None:
        self.words = words

    def read_many(self, image: np.ndarray, boxes: list) -> None:
        pass

    def find(self, image: np.ndarray, text: str, box=None, min_score: float = 80.0) -> list[TextMatch]:
        if box is None or box[2] > 300 or box[3] > 300:
            return []
        x, y, w, h = box
        inside = [
            wd
            for wd in self.words
            if x <= wd.box[0] and y <= wd.box[1] and wd.box[0] + wd.box[2] <= x + w and wd.box[1] + wd.box[3] <= y + h
        ]
        return find_text(inside, text, min_score)


def field_pixels() -> np.ndarray:
    rng = np.random.default_rng(5)
    return rng.integers(0, 256, (FIELD[3], FIELD[2], 3), dtype=np.uint8)


def frame(dx: int, dy: int, twin: bool = False) -> np.ndarray:
    f = np.full((768, 1024, 3), 230, np.uint8)
    x, y = FIELD[0] + dx, FIELD[1] + dy
    f[y : y + FIELD[3], x : x + FIELD[2]] = field_pixels()
    if twin:
        f[600 : 600 + FIELD[3], 40 : 40 + FIELD[2]] = field_pixels()
    return f


def words(dx: int, dy: int, shown: tuple[str, ...] = ("Patient", "Clinic")) -> list[Word]:
    return [Word(t, 90.0, (b[0] + dx, b[1] + dy, b[2], b[3])) for t, b in LABELS.items() if t in shown]


FACTS = [StartFact(text_present=t, region=b) for t, b in LABELS.items()]


def judge(
    dx: int, dy: int, *, shown: tuple[str, ...] = ("Patient", "Clinic"), twin: bool = False, anchored: bool = True
):
    checks = ScreenChecks(
        WindowOnlyOcr(words(dx, dy, shown)), {"templates/01.png": TemplateImage(field_pixels()).prepare()}
    )
    return judge_start(
        checks, FACTS, [f.text for f in FACTS], frame(dx, dy, twin), ("templates/01.png", FIELD) if anchored else None
    )


def test_a_moved_app_is_placed_by_its_first_target_and_its_labels_read_there() -> None:
    v = judge(-300, 180)
    assert v.ok, v.differs()
    assert (v.placement.dx, v.placement.dy) == (-300, 180)


def test_without_the_anchor_the_unread_labels_fail_as_before() -> None:
    assert not judge(-300, 180, anchored=False).ok


def test_a_label_that_is_not_there_still_fails_where_the_app_is() -> None:
    v = judge(-300, 180, shown=("Patient",))
    assert not v.ok and "'Clinic' is not shown" in v.differs()


def test_a_first_target_with_a_twin_places_nothing() -> None:
    v = judge(-300, 180, twin=True)
    assert not v.ok and (v.placement.dx, v.placement.dy) == (0, 0)


def test_an_app_at_natural_size_on_a_bigger_screen_is_placed_at_its_own_scale() -> None:
    """Screen 2x the recorded one, the app drawn at its natural size: the screen's ratio would put the labels'
    windows at twice their place; the first target's match scale (1) puts them where the app is."""
    dx, dy = 500, 300
    big = np.full((1536, 2048, 3), 230, np.uint8)
    x, y = FIELD[0] + dx, FIELD[1] + dy
    big[y : y + FIELD[3], x : x + FIELD[2]] = field_pixels()
    checks = ScreenChecks(
        WindowOnlyOcr(words(dx, dy)), {"templates/01.png": TemplateImage(field_pixels()).prepare()}, (2.0, 2.0)
    )
    v = judge_start(checks, FACTS, [f.text for f in FACTS], big, ("templates/01.png", FIELD))
    assert v.ok, v.differs()
    assert (v.placement.sx, v.placement.dx, v.placement.dy) == (1.0, dx, dy)
