"""The window's displacement that places a fact no target of its step places (`verify.place`): trusted only when
every target found so far agrees on it (a batch's row found lower while its toolbar stayed put is no move), and a
fact read at the shifted place holds only where the step drew it (a word already on the screen proves nothing)."""

from __future__ import annotations

import numpy as np
import pytest

from openadapt_flow.bundle.models import Postcondition
from openadapt_flow.verify.place import Anchor, Placement, agreed_shift
from openadapt_flow.verify.screen import ScreenChecks
from openadapt_flow.vision.ocr import OcrEngine, TextMatch
from tests.support.screens import Canvas

pytestmark = pytest.mark.timeout(60)
MOVED = (120, 100)
WORD = (200, 200, 130, 24)  # where the recording read the dialog's word


class AreaOnlyOcr(OcrEngine):
    """Reads an area, never the whole frame: a small dialog word a whole-frame read misses."""

    def find(self, image: np.ndarray, text: str, box=None, min_score: float = 80.0) -> list[TextMatch]:
        if box is None or box[2] * box[3] > image.shape[0] * image.shape[1] // 4:
            return []
        return super().find(image, text, box, min_score)


def found(recorded: tuple[int, int], by: tuple[int, int], scale: float = 1.0) -> Anchor:
    return Anchor(recorded, (recorded[0] + by[0], recorded[1] + by[1]), (scale, scale))


def test_targets_that_agree_place_the_window() -> None:
    shift = agreed_shift([found((60, 70), MOVED), found((300, 20), (MOVED[0] + 3, MOVED[1] - 2))], (1.0, 1.0))
    assert shift is not None and shift.box(WORD) == (322, 299, 130, 24)


def test_targets_that_disagree_place_nothing() -> None:
    # a row found 80 px lower than recorded (the batch's next item) while the toolbar stayed where it was
    assert agreed_shift([found((300, 20), (0, 0)), found((60, 170), (0, 80))], (1.0, 1.0)) is None


def test_no_target_or_no_move_places_nothing() -> None:
    assert agreed_shift([], (1.0, 1.0)) is None
    assert agreed_shift([found((60, 70), (2, -1))], (1.0, 1.0)) is None  # where the screen's scaling puts it already
    assert agreed_shift([found((60, 70), (0, 0), 1.5)], (1.5, 1.5)) is None


def dialog(dx: int, dy: int, word: bool = True) -> np.ndarray:
    c = Canvas()
    c.draw.rectangle([dx + 180, dy + 180, dx + 400, dy + 280], fill=(200, 200, 200), outline=(0, 0, 0))
    if word:
        c.text(dx + 200, dy + 200, "formatting", size=20)
    return c.array()


@pytest.fixture(scope="module")
def checks() -> ScreenChecks:
    return ScreenChecks(AreaOnlyOcr(), {})


PC = Postcondition.model_validate({"text_present": "formatting", "region": list(WORD)})
SHIFT = Placement(1.0, 1.0, float(MOVED[0]), float(MOVED[1]))


def test_a_word_drawn_by_the_step_where_the_moved_window_shows_it_holds(checks: ScreenChecks) -> None:
    before, after = Canvas().array(), dialog(*MOVED)
    assert not checks.postcondition(PC, after, before, "formatting").ok  # today's rule: not read at its place
    seen = checks.postcondition(PC, after, before, "formatting", None, SHIFT)
    assert seen.ok and "moved window" in (seen.detail or ""), seen


def test_a_word_already_there_before_the_step_does_not_hold(checks: ScreenChecks) -> None:
    shown = dialog(*MOVED)  # the step changed nothing there: the word was on the screen all along
    assert not checks.postcondition(PC, shown, shown.copy(), "formatting", None, SHIFT).ok


def test_a_text_that_must_be_absent_is_absent_where_the_moved_window_shows_it_too(checks: ScreenChecks) -> None:
    pc = Postcondition.model_validate({"text_absent": "formatting", "region": list(WORD)})
    after = dialog(*MOVED)  # the dialog stayed open in the moved window
    assert checks.postcondition(pc, after, None, "formatting").ok  # today: absent where recorded
    assert not checks.postcondition(pc, after, None, "formatting", None, SHIFT).ok


def test_a_fact_its_target_places_is_not_shifted(checks: ScreenChecks) -> None:
    pc = Postcondition.model_validate({"text_present": "formatting", "region": list(WORD), "relative_to": "target"})
    anchor = Anchor((60, 70), (60, 70), (1.0, 1.0))  # its target says: where recorded
    assert not checks.postcondition(pc, dialog(*MOVED), Canvas().array(), "formatting", anchor, SHIFT).ok


def badge(dx: int, dy: int) -> np.ndarray:
    """A dialog with a saved-badge (a picture, no words) in a window moved by (dx, dy)."""
    c = Canvas()
    c.draw.rectangle([dx + 180, dy + 180, dx + 400, dy + 280], fill=(200, 200, 200), outline=(0, 0, 0))
    c.draw.ellipse([dx + 200, dy + 200, dx + 240, dy + 240], fill=(40, 140, 60), outline=(0, 0, 0), width=2)
    c.draw.line([dx + 208, dy + 220, dx + 218, dy + 232, dx + 234, dy + 206], fill=(255, 255, 255), width=4)
    return c.array()


def test_a_picture_drawn_where_the_moved_window_shows_it_holds_one_already_there_does_not() -> None:
    from openadapt_flow.vision.template import TemplateImage

    checks = ScreenChecks(AreaOnlyOcr(), {"templates/badge.png": TemplateImage(badge(0, 0)[196:246, 196:246].copy())})
    pc = Postcondition.model_validate({"template_present": "templates/badge.png", "region": [196, 196, 50, 50]})
    before, after = Canvas().array(), badge(*MOVED)
    assert not checks.postcondition(pc, after, before, None).ok  # today's rule: looked for only near its place
    assert checks.postcondition(pc, after, before, None, None, SHIFT).ok
    assert not checks.postcondition(pc, after, after.copy(), None, None, SHIFT).ok  # shown before the step
