"""The start state judged on one frame (verify/start.py) and the blank fact (verify/blank.py), on drawn screens with
real Tesseract: a moved or scaled app still passes, a half-typed form does not, and a word read at two other places
never passes for the start's."""

from __future__ import annotations

import numpy as np
import pytest

from openadapt_flow.bundle.models import Postcondition, StartFact
from openadapt_flow.verify.blank import blank_check
from openadapt_flow.verify.screen import Anchor, ScreenChecks
from openadapt_flow.verify.start import judge_start
from openadapt_flow.vision.ocr import OcrEngine
from tests.support.screens import Canvas, font

pytestmark = pytest.mark.timeout(60)


def screen(
    dx: int = 0,
    dy: int = 0,
    s: float = 1.0,
    vendor: str = "",
    title: str = "Invoices",
    extra: tuple[tuple[str, int, int], ...] = (),
    amount_y: int = 190,
) -> np.ndarray:
    """A form at (dx, dy), drawn `s` times bigger: title, Vendor label and its field, Amount label, a Save button."""
    c = Canvas(800, 600)

    def at(x: float, y: float) -> tuple[int, int]:
        return round(dx + s * x), round(dy + s * y)

    c.draw.text(at(40, 30), title, fill=(0, 0, 0), font=font(round(28 * s)))
    c.draw.text(at(40, 120), "Vendor", fill=(0, 0, 0), font=font(round(22 * s)))
    (x0, y0), (x1, y1) = at(170, 110), at(490, 150)
    c.draw.rectangle([x0, y0, x1, y1], fill=(255, 255, 255), outline=(112, 112, 112))
    if vendor:
        c.draw.text(at(180, 118), vendor, fill=(0, 0, 0), font=font(round(20 * s)))
    c.draw.text(at(40, amount_y), "Amount", fill=(0, 0, 0), font=font(round(22 * s)))
    c.draw.text(at(420, 260), "Ledger", fill=(0, 0, 0), font=font(round(22 * s)))
    for text, x, y in extra:
        c.draw.text((x, y), text, fill=(0, 0, 0), font=font(22))
    return c.array()


FACTS = [
    StartFact(text_present="Invoices", region=(40, 33, 120, 26)),
    StartFact(text_present="Amount", region=(40, 193, 86, 20)),
    StartFact(text_present="Ledger", region=(420, 263, 80, 22)),
    StartFact(text_absent="Saved", region=(40, 33, 150, 26)),
    StartFact(blank=(174, 114, 312, 32)),
]


@pytest.fixture(scope="module")
def checks() -> ScreenChecks:
    return ScreenChecks(OcrEngine(), {})


def judge(checks: ScreenChecks, frame: np.ndarray, facts: list[StartFact] = FACTS):
    return judge_start(checks, facts, [f.text for f in facts], frame)


@pytest.mark.parametrize(
    "name,frame", [("as recorded", screen()), ("window moved", screen(160, 95)), ("drawn 1.25x bigger", screen(s=1.25))]
)
def test_the_recorded_start_passes_where_the_app_is(checks, name, frame):
    v = judge(checks, frame)
    assert v.ok, f"{name}: {v.differs()}"


@pytest.mark.parametrize(
    "frame,differs",
    [
        (screen(vendor="ACME"), "the area [174, 114, 312, 32] is not empty"),
        (screen(160, 95, vendor="ACME"), "the area [174, 114, 312, 32] is not empty"),  # placed with the moved window
        (screen(s=1.25, vendor="ACME"), "the area [174, 114, 312, 32] is not empty"),
        (screen(title="Saved"), "'Saved' is shown"),
    ],
)
def test_a_dirty_app_does_not_pass(checks, frame, differs):
    v = judge(checks, frame)
    assert not v.ok and differs in v.differs(), v.differs()


def test_a_word_read_at_two_other_places_is_no_start_fact(checks):
    """Not where recorded, and twice elsewhere: which one is the start's cannot be told, so it does not hold."""
    frame = screen(extra=(("Balance", 600, 400), ("Balance", 600, 500)))
    v = judge(checks, frame, [StartFact(text_present="Balance", region=(300, 40, 80, 22))])
    assert not v.ok and "read at 2 places, none where recorded" in v.differs()


def test_a_word_laid_out_anew_does_not_move_where_the_other_facts_are_judged(checks):
    """'Amount' read 150 px lower (once: still the start's) does not drag the placement: the blank field is judged
    where the two agreeing words put it, so the typed value there is seen."""
    v = judge(checks, screen(amount_y=340))
    assert (v.placement.dx, v.placement.dy) == pytest.approx((0, 0), abs=4)
    assert "Amount" not in v.differs() and "px from where the other start facts place the app" in str(
        v.checks[1].detail
    )
    dirty = judge(checks, screen(amount_y=340, vendor="ACME"))
    assert not dirty.ok and "the area [174, 114, 312, 32] is not empty" in dirty.differs(), dirty.differs()


def field(text: str = "", caret: int | None = None, dark: bool = False) -> np.ndarray:
    c = Canvas(400, 100)
    bg, fg = ((46, 46, 46), (236, 236, 236)) if dark else ((255, 255, 255), (0, 0, 0))
    if dark:
        c.draw.rectangle([0, 0, 399, 99], fill=(28, 28, 28))
    c.draw.rectangle([50, 30, 350, 70], fill=bg, outline=(112, 112, 112))
    if text:
        c.draw.text((60, 38), text, fill=fg, font=font(20))
    if caret is not None:
        c.draw.rectangle([caret, 36, caret + 1, 64], fill=fg)
    return c.array()


@pytest.mark.parametrize(
    "frame,box,blank",
    [
        (field(), (53, 33, 295, 35), True),
        (field(caret=60), (53, 33, 295, 35), True),  # a focused empty field's text cursor
        (field(dark=True), (53, 33, 295, 35), True),
        (field(), (49, 29, 295, 35), True),  # placed 4 px off: its border is no content
        (field("A"), (53, 33, 295, 35), False),
        (field("i", dark=True), (53, 33, 295, 35), False),  # one small letter is content
        (field("ACME"), (49, 29, 295, 35), False),
    ],
)
def test_blank_is_nothing_but_background(frame, box, blank):
    assert blank_check(frame, box).ok is blank


def test_blank_is_a_postcondition_too_placed_with_the_target(checks):
    """`expect: [{blank: …, relative_to: target}]`: the form is cleared after Save, judged where the target was found."""
    cleared = Postcondition(blank=(174, 114, 312, 32), relative_to="target")
    moved = Anchor(recorded=(200, 280), live=(360, 375), scale=(1.0, 1.0))
    assert checks.postcondition(cleared, screen(160, 95), None, None, moved).ok
    kept = checks.postcondition(cleared, screen(160, 95, vendor="ACME"), None, None, moved)
    assert not kept.ok and kept.kind == "blank"


def test_one_word_read_away_from_its_place_moves_nothing(checks):
    """A lone start word read elsewhere may be a look-alike (a form's title for the list's): the absent facts are
    still judged where the recording had them, and the form's label shown there is seen."""
    facts = [
        StartFact(text_present="Invoices", region=(300, 400, 120, 26)),
        StartFact(text_absent="Vendor", region=(40, 123, 77, 17)),
    ]
    v = judge(checks, screen(), facts)
    assert (v.placement.dx, v.placement.dy) == (0, 0)
    assert not v.ok and "'Vendor' is shown" in v.differs(), v.differs()
