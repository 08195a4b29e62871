"""Carets drawn other than as a thin bar, caught by the replay's readback on real toolkits (issue 23 corpus): Motif's
I-beam touching the last glyph (NEdit: 'Diaz' read 'Diad,'), Xaw's block after it (xedit: 'Diaa]'), Tk's 2 px bar
flush against it (a 'c' read 'q'), Chromium's 1 px bar at scale 1.25 inside the field's focus ring (whose far side is
a taller line and no caret). Each crop is a replay's frame of the real app; painted out, the line reads exactly.
Painting removes only a caret's own pixels: a line without a caret, or ending in a glyph, is left alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from openadapt_flow.verify.readback import find_typed
from openadapt_flow.vision.caret import without_caret_in_lines
from openadapt_flow.vision.ocr import OcrEngine

pytestmark = pytest.mark.timeout(60)
DATA = Path(__file__).resolve().parents[2] / "data" / "carets"


@pytest.fixture(scope="module")
def ocr() -> OcrEngine:
    return OcrEngine()


def crop(name: str) -> np.ndarray:
    return np.asarray(Image.open(DATA / name).convert("RGB"))


@pytest.mark.parametrize(
    "name,typed",
    [
        ("motif-nedit-ibeam.png", "Patient: Rosa Diaz"),
        ("xaw-xedit-block.png", "Patient: Rosa Diaz"),
        ("tk-bar-2px.png", "Riverside Clinic"),
        ("chromium-bar-in-ring.png", "Riverside Clinic"),  # 1 px, taller than the line, inside a focus ring at 1.25
        ("tk-bar-below-another-line.png", "Riverside Clinic"),  # the field above in the same columns as the caret
        ("motif-nedit-ibeam-below-descenders.png", "Patient: Rosa Diaz"),  # "Eggs" above: its g's reach into the line
    ],
)
def test_a_caret_drawn_at_the_end_of_the_line_is_painted_out(ocr: OcrEngine, name: str, typed: str) -> None:
    image = crop(name)
    assert find_typed(ocr.read(image), typed, append=True) is None, "the caret no longer garbles this read"
    found = without_caret_in_lines(image)
    assert found is not None, "no caret found"
    painted, column = found
    assert find_typed(ocr.read(painted), typed, append=True) is not None, [w.text for w in ocr.read(painted)]
    assert int((painted != np.asarray(Image.fromarray(image).convert("L"))).sum()) < 120  # a caret's pixels, no more


@pytest.mark.parametrize(
    "name",
    [
        "motif-nedit-ibeam.png",
        "xaw-xedit-block.png",
        "tk-bar-2px.png",
        "chromium-bar-in-ring.png",
        "tk-bar-below-another-line.png",
        "motif-nedit-ibeam-below-descenders.png",
    ],
)
def test_a_line_whose_caret_is_gone_is_left_alone(name: str) -> None:
    """The same line with the caret already painted out has none left: a glyph ('z', 'c') is never taken for one."""
    found = without_caret_in_lines(crop(name))
    assert found is not None
    again = np.repeat(found[0][:, :, None], 3, axis=2)
    assert without_caret_in_lines(again) is None


def test_a_faint_block_caret_on_a_dark_theme_is_painted_out_at_the_faint_threshold(ocr: OcrEngine) -> None:
    """xedit under a dark theme draws its block caret black on #202020 (32 grey levels apart): below the solid-ink
    threshold, found at the faint one."""
    from openadapt_flow.vision.caret import FAINT_CARET_INK

    image = crop("xaw-xedit-block-dark.png")
    assert find_typed(ocr.read(image), "Patient: Rosa Diaz", append=True) is None
    assert without_caret_in_lines(image) is None
    found = without_caret_in_lines(image, FAINT_CARET_INK)
    assert found is not None and find_typed(ocr.read(found[0]), "Patient: Rosa Diaz", append=True) is not None
