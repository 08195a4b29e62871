"""A table's new row shows the same placeholder ("NULL") in every column; which one a cell is, only its column's
header says (column widths change from run to run). A template hit on a target with landmarks must have one of
them where it was recorded: else it is a look-alike, and the OCR rung decides by the landmark."""

from __future__ import annotations

import pytest

from openadapt_flow.bundle.models import Landmark, Target
from openadapt_flow.ladder.ladder import Ladder
from openadapt_flow.vision.ocr import OcrEngine
from tests.support.screens import Canvas, crop

pytestmark = pytest.mark.timeout(60)
CELL_W, CELL_H = 110, 40
RECORDED = (40, 200)  # the name cell in the recording (x, y of its box)


def table(name_x: int, clinic_x: int, name_w: int = CELL_W) -> Canvas:
    c = Canvas().text(name_x + 10, 100, "name").text(clinic_x + 10, 100, "clinic")
    c.button(name_x, RECORDED[1], "NULL", w=name_w, h=CELL_H)
    return c.button(clinic_x, RECORDED[1], "NULL", w=CELL_W, h=CELL_H)


def target() -> Target:
    x, y = RECORDED
    return Target(
        template="templates/cell.png",
        region=(x, y, CELL_W, CELL_H),
        point=(CELL_W // 2, CELL_H // 2),
        text="NULL",
        landmarks=[Landmark(text="name", dx=-10, dy=-88)],
    )


def ladder() -> Ladder:
    recorded = table(RECORDED[0], 400).array()
    return Ladder({"templates/cell.png": crop(recorded, (*RECORDED, CELL_W, CELL_H))}, (640, 480), OcrEngine())


def test_a_look_alike_cell_in_another_column_is_not_clicked_but_the_cell_under_its_header_is():
    # the name column became narrower: its cell no longer matches the template, the clinic cell (as wide) does
    frame = table(RECORDED[0], 150, name_w=80).array()
    res = ladder().resolve(frame, target())
    assert res.ok, res.message
    x, _ = res.point
    assert RECORDED[0] <= x < RECORDED[0] + 80  # the name column's cell, found by OCR and its header
    assert any(e.verdict == "ambiguous" and "no landmark ('name')" in e.detail for e in res.evidence)


def test_a_hit_with_its_landmark_where_recorded_stands():
    res = ladder().resolve(table(RECORDED[0], 400).array(), target())
    assert res.ok and res.rung.startswith("template")


def test_a_landmark_read_nowhere_is_no_evidence_against_a_hit():
    c = Canvas().button(RECORDED[0], RECORDED[1], "NULL", w=CELL_W, h=CELL_H)  # the headers are not on this screen
    res = ladder().resolve(c.button(400, RECORDED[1], "Other", w=CELL_W, h=CELL_H).array(), target())
    assert res.ok and res.rung.startswith("template")
