"""Facts that move with the target: a window moved since the recording must not halt a step whose click was right
(and one that did not change where the target now is must still fail); older bundles keep absolute regions."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from openadapt_flow.bundle.models import Postcondition
from openadapt_flow.verify.screen import Anchor, ScreenChecks
from openadapt_flow.vision.ocr import OcrEngine

pytestmark = pytest.mark.timeout(60)
DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
BUTTON = (60, 120)  # the recorded click point of the step's target
DISPLAY = [40, 40, 200, 40]  # where the recorded step changed the screen (a display above its button)
MOVED = (150, 90)  # how far the window moved at replay


def window(dx: int, dy: int, shown: str) -> np.ndarray:
    im = Image.new("RGB", (640, 400), (30, 30, 30))
    d = ImageDraw.Draw(im)
    d.rectangle([30 + dx, 30 + dy, 260 + dx, 160 + dy], fill=(240, 240, 240))
    d.rectangle([40 + dx, 40 + dy, 240 + dx, 80 + dy], fill=(255, 255, 255), outline=(120, 120, 120))
    d.text((180 + dx, 48 + dy), shown, font=ImageFont.truetype(DEJAVU, 20), fill=(0, 0, 0))
    d.rectangle([40 + dx, 105 + dy, 80 + dx, 135 + dy], fill=(220, 220, 220), outline=(120, 120, 120))
    return np.array(im)


@pytest.fixture(scope="module")
def checks() -> ScreenChecks:
    return ScreenChecks(OcrEngine(), {})


def moved_anchor() -> Anchor:
    return Anchor(BUTTON, (BUTTON[0] + MOVED[0], BUTTON[1] + MOVED[1]), (1.0, 1.0))


def test_region_changed_follows_the_target_into_a_moved_window(checks: ScreenChecks) -> None:
    before, after = window(*MOVED, "12"), window(*MOVED, "408")
    pc = Postcondition.model_validate({"region_changed": DISPLAY, "relative_to": "target"})
    assert checks.postcondition(pc, after, before, None, moved_anchor()).ok
    same = checks.postcondition(pc, before, before, None, moved_anchor())
    assert not same.ok  # nothing changed where the display now is: still a failure


def test_a_result_is_read_where_it_appeared_relative_to_the_target(checks: ScreenChecks) -> None:
    after = window(*MOVED, "408")
    pc = Postcondition.model_validate({"text_absent": "408", "region": DISPLAY, "relative_to": "target"})
    # text_absent looks only in its placed region: placed with the target, it sees the moved display
    assert not checks.postcondition(pc, after, None, "408", moved_anchor()).ok


def test_a_bundle_without_the_marker_keeps_absolute_regions(checks: ScreenChecks) -> None:
    before, after = window(*MOVED, "12"), window(*MOVED, "408")
    pc = Postcondition.model_validate({"region_changed": DISPLAY})
    assert not checks.postcondition(pc, after, before, None, moved_anchor()).ok  # as it always judged


def test_a_checkpoint_keeps_the_area_where_the_target_was_found(checks: ScreenChecks) -> None:
    pc = Postcondition.model_validate({"text_present": "408", "region": DISPLAY, "relative_to": "target"})
    kept = checks.anchored(pc, moved_anchor())
    assert kept.relative_to is None and kept.region == (DISPLAY[0] + MOVED[0], DISPLAY[1] + MOVED[1], 200, 40)


def test_relative_to_needs_an_area() -> None:
    with pytest.raises(ValueError):
        Postcondition.model_validate({"text_present": "Saved", "relative_to": "target"})


def page(caret_x: int) -> np.ndarray:
    """An editor's empty page with a text caret (1 px wide, 17 px high) on its first line at caret_x."""
    im = np.full((400, 640, 3), 250, np.uint8)
    im[70:87, caret_x] = 40
    return im


def test_an_area_placed_from_a_target_found_at_another_scale_is_looked_for_around_its_place(
    checks: ScreenChecks,
) -> None:
    """gnome-text-editor at scale 1.25: the click below the text moved the caret from the line's start (x 17) to
    its end, recorded as region_changed [17, 66, 118, 17] relative to a blank-page target at (350, 300). At replay
    the target matched at scale 1.1 on an unscaled screen: the area placed from it starts at x 30, past the caret
    that left x 17 and short of where it went. The change is there, within the placement's own uncertainty."""
    pc = Postcondition.model_validate({"region_changed": [17, 66, 118, 17], "relative_to": "target"})
    found = Anchor((350, 300), (396, 326), (1.1, 1.1))
    before, after = page(17), page(162)
    assert checks.place(pc, found) == (30, 69, 130, 19)
    assert checks.postcondition(pc, after, before, None, found).ok
    assert not checks.postcondition(pc, before, before, None, found).ok  # nothing changed: still a failure
    far = page(17)
    far[300:317, 600] = 40  # a change far from the area (more than the scale's uncertainty) is not its change
    assert not checks.postcondition(pc, far, before, None, found).ok
    # found at the screen's own scale the area is exact, as before
    same_scale = Anchor((350, 300), (396, 326), (1.0, 1.0))
    assert not checks.postcondition(pc, page(5), page(4), None, same_scale).ok
