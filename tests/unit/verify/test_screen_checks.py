"""Screen facts on rendered frames with real Tesseract: where text facts look, and what they conclude."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from openadapt_flow.bundle.models import Postcondition
from openadapt_flow.verify.screen import ScreenChecks
from openadapt_flow.vision.ocr import OcrEngine

pytestmark = pytest.mark.timeout(60)
DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def frame(items: list[tuple[str, int, int]]) -> np.ndarray:
    im = Image.new("RGB", (800, 500), (240, 240, 240))
    d = ImageDraw.Draw(im)
    for text, x, y in items:
        d.text((x, y), text, font=ImageFont.truetype(DEJAVU, 16), fill=(20, 20, 20))
    return np.array(im)


@pytest.fixture()
def checks() -> ScreenChecks:
    return ScreenChecks(OcrEngine(), {})


def judge(checks: ScreenChecks, img: np.ndarray, **fact) -> tuple[bool, str, int]:
    calls = checks.ocr.calls
    pc = Postcondition.model_validate(fact)
    c = checks.postcondition(pc, img, None, pc.text)
    return c.ok, c.detail, checks.ocr.calls - calls


SAVED_AT = [100, 50, 60, 20]  # where "Saved" was recorded


def test_text_present_in_its_region_reads_only_the_region(checks: ScreenChecks) -> None:
    img = frame([("Saved", 102, 52), ("Total", 500, 400)])
    ok, detail, calls = judge(checks, img, text_present="Saved", region=SAVED_AT)
    assert ok and "outside" not in detail and calls == 1


def test_text_present_that_moved_is_still_found_on_the_whole_frame(checks: ScreenChecks) -> None:
    img = frame([("Saved", 500, 300)])
    ok, detail, calls = judge(checks, img, text_present="Saved", region=SAVED_AT)
    assert ok and "outside its region" in detail and calls == 2  # the window, then the whole frame


def test_text_present_nowhere_fails(checks: ScreenChecks) -> None:
    ok, detail, _ = judge(checks, frame([("Cancel", 500, 300)]), text_present="Saved", region=SAVED_AT)
    assert not ok and detail == "not read"


def test_text_absent_with_a_region_looks_only_there(checks: ScreenChecks) -> None:
    elsewhere = frame([("Amount", 600, 420)])
    ok, detail, _ = judge(checks, elsewhere, text_absent="Amount", region=SAVED_AT)
    assert ok and detail == "absent in its region"
    ok, _, _ = judge(checks, elsewhere, text_absent="Amount")  # without a region: the whole frame
    assert not ok
    drifted = frame([("Amount", 125, 75)])  # 25 px off its region: inside the absent window (padded 40 px)
    ok, detail, _ = judge(checks, drifted, text_absent="Amount", region=SAVED_AT)
    assert not ok and detail == "still shown in its region"


def test_postconditions_read_overlapping_windows_once(checks: ScreenChecks) -> None:
    img = frame([("Invoices", 102, 52), ("Saved", 400, 300)])
    pcs = [Postcondition(text_present="Invoices", region=SAVED_AT), Postcondition(text_absent="Saved", region=SAVED_AT)]
    calls = checks.ocr.calls
    got = checks.postconditions(pcs, [pc.text for pc in pcs], img, None)
    assert [c.ok for c in got] == [True, True]
    assert checks.ocr.calls - calls == 1  # the present window lies inside the absent one
