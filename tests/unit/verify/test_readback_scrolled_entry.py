"""A GTK entry too narrow for the value typed into it clips the text at its padding and scrolls it to the end typed at:
zenity's Patient entry at GDK_DPI_SCALE=1.25 shows "Katherine Johnson" as "<atherine Johnson", the K cut (the corpus
case halted there). The readback takes the value's end for the value only when the field proves it scrolled
(`vision.scrolled`), by the same exact rule; the same value typed short by its K shows whole, with room to spare on
the right, and still halts. Real Tesseract, on the entry as zenity drew it (tests/data/scrolled/, the halt frame's
crop at 340,336 and the frame before the typing) and on entries drawn with DejaVu Sans (tests/unit/vision/entries.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from openadapt_flow.verify.screen import ScreenChecks
from openadapt_flow.vision.ocr import OcrEngine
from tests.unit.vision.entries import SHORT, VALUE, cut_width, entry

pytestmark = pytest.mark.timeout(120)
DATA = Path(__file__).resolve().parents[2] / "data" / "scrolled"
ORIGIN = (340, 336)  # where the crop was on the 1024x768 screen
POINT = (490, 357)  # where the replay clicked the entry
BAND = (328, 329, 600, 60)  # the step's readback band, as the replay had it
SYNTH_AT = (300, 400)  # where a drawn entry's face is put on a drawn screen


def screen(crop: np.ndarray, at: tuple[int, int]) -> np.ndarray:
    frame = np.full((768, 1024, 3), 246, np.uint8)
    if crop.ndim == 2:
        crop = np.stack([crop] * 3, axis=-1)
    frame[at[1] : at[1] + crop.shape[0], at[0] : at[0] + crop.shape[1]] = crop
    return frame


@pytest.fixture(scope="module")
def checks() -> ScreenChecks:
    return ScreenChecks(OcrEngine(), {})


@pytest.fixture(scope="module")
def zenity() -> tuple[np.ndarray, np.ndarray]:
    after = np.asarray(Image.open(DATA / "gtk-zenity-entry-scale125.png").convert("RGB")).copy()
    before = np.asarray(Image.open(DATA / "gtk-zenity-entry-scale125-before.png").convert("RGB")).copy()
    return screen(after, ORIGIN), screen(before, ORIGIN)


def test_zenitys_entry_scrolled_at_scale_1_25_reads_back_the_value(checks, zenity):
    after, before = zenity
    got = checks.readback(after, before, VALUE, BAND, POINT)
    assert got.ok, got.detail
    assert "the field scrolled, its first glyph cut" in got.detail, got.detail


@pytest.mark.parametrize(
    "typed",
    [
        "Maria Johnson",  # the field's end is not this value's end
        "Katherine Johnsen",
        "Katherine Johnson Jr",  # the field ends before this value does
    ],
)
def test_zenitys_scrolled_entry_does_not_read_back_another_value(checks, zenity, typed):
    after, before = zenity
    assert not checks.readback(after, before, typed, BAND, POINT).ok


def test_zenitys_entry_without_the_cut_k_does_not_read_back_the_value(checks, zenity):
    """The K's remains painted out: "atherine Johnson" then starts further in than the caret stands from the right,
    as a value typed short by its K would in a field just wide enough: not proven scrolled."""
    after, before = zenity
    after = after.copy()
    after[340:375, 425:437] = 255
    got = checks.readback(after, before, VALUE, BAND, POINT)
    assert not got.ok, got.detail


def bordered(face: np.ndarray) -> np.ndarray:
    """The face inside a 1 px grey border, as a GTK entry draws it."""
    out = np.full((face.shape[0] + 2, face.shape[1] + 2), 150, np.uint8)
    out[1:-1, 1:-1] = face
    return out


@pytest.fixture(scope="module")
def drawn() -> dict[str, np.ndarray]:
    width = cut_width(15)
    empty = np.full((28, width), 255, np.uint8)
    return {
        "before": screen(bordered(empty), SYNTH_AT),
        "scrolled": screen(bordered(entry(VALUE, width)), SYNTH_AT),
        "short": screen(bordered(entry(SHORT, width)), SYNTH_AT),
    }


def test_a_drawn_entry_scrolled_to_the_values_end_reads_it_back(checks, drawn):
    point = (SYNTH_AT[0] + 60, SYNTH_AT[1] + 14)
    band = (SYNTH_AT[0] - 40, SYNTH_AT[1] - 16, 400, 60)
    got = checks.readback(drawn["scrolled"], drawn["before"], VALUE, band, point)
    assert got.ok, got.detail


def test_a_value_typed_short_by_its_first_letter_still_halts(checks, drawn):
    """The K lost: "atherine Johnson" fits the entry whole, from its padding, with room to spare."""
    point = (SYNTH_AT[0] + 60, SYNTH_AT[1] + 14)
    band = (SYNTH_AT[0] - 40, SYNTH_AT[1] - 16, 400, 60)
    got = checks.readback(drawn["short"], drawn["before"], VALUE, band, point)
    assert not got.ok, got.detail
    assert "atherine" in got.detail, got.detail  # it was read, and refused


@pytest.mark.parametrize(
    "read,ok",
    [
        ("<atherine Johnson|", True),  # the cut K read as a mark, the rest the value's end
        ("atherine Johnson", True),
        ("Xatherine Johnson", False),  # a letter where the K is: another value shown whole
        ("Johnson", False),  # too little of the value
    ],
)
def test_the_rule_for_a_scrolled_fields_reading(read, ok):
    from openadapt_flow.verify.readback import shows

    assert shows(VALUE, read, scrolled=True) is ok
    assert not shows(VALUE, read), "never without the field's proof that it scrolled"


def test_a_scrolled_fields_end_is_evidence_only_from_8_characters():
    from openadapt_flow.verify.readback import shows

    assert not shows("Ana Lopez", "a Lopez", scrolled=True)  # 6 characters: most of the value, but any '...a Lopez'
    assert shows("Anabel Lopez", "abel Lopez", scrolled=True)
