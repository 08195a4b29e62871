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


def test_readback_never_looks_beyond_its_band_when_the_screen_size_changed(checks: ScreenChecks) -> None:
    after = frame([("Acme Corp", 500, 400)])  # the value elsewhere (a list row); the field itself is empty
    before = np.zeros((500, 780, 3), np.uint8)  # the desktop was resized between the two frames
    got = checks.readback(after, before, "Acme Corp", (100, 70, 600, 60))
    assert not got.ok


def test_text_absent_judges_the_same_alone_and_read_together_with_another_fact(checks: ScreenChecks) -> None:
    # "Invoice saved successfully" sticks out of the absent window; read in a union with the present
    # fact's window, the words that only reach into the window must still count.
    img = frame([("Invoice saved successfully", 150, 52), ("Ledger", 130, 75)])
    absent = Postcondition(text_absent="Invoice saved successfully", region=(100, 50, 200, 20))
    present = Postcondition(text_present="Ledger", region=(130, 75, 250, 20))
    alone = checks.postcondition(absent, img, None, absent.text)
    checks.ocr.clear_cache()
    together = checks.postconditions([present, absent], [present.text, absent.text], img, None)
    assert not alone.ok and [c.ok for c in together] == [True, False]


def test_the_identity_gate_scales_with_the_match(checks: ScreenChecks) -> None:
    """An app drawn 25 % bigger (Tk at scale 1.25, issue 23 corpus) spaces the value it shows from the Save button 25 %
    further: the gate's box, recorded at scale 1, is placed at the scale the target matched at, not the screen's
    ratio (1 here), or its left edge cuts the value; a target found by OCR has no scale, and its gate covers them all."""
    point = (600, 300)
    near = (-348, -94, 432, 74)  # recorded: "Katherine" about 300 px left of and 80 px above Save
    img = frame([("Katherine Johnson", point[0] - 420, point[1] - 100)])
    assert not checks.identity(img, point, near, "Katherine Johnson", 1.0).ok  # the template matched at 1: not here
    got = checks.identity(img, point, near, "Katherine Johnson", 1.25)
    assert got.ok, got.detail
    # found by its text, no scale known: the box covers where the gate falls at the template rung's scales
    assert checks.identity(img, point, near, "Katherine Johnson").ok
