"""A `type` step is verified only in the field it means (issue 33, item 2): the readback shows the text where it was
typed; the field's recorded relations (its column's header, a label beside it) must hold around that point too.
Real Tesseract on drawn tables."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from openadapt_flow.backends.fake import FakeBackend
from openadapt_flow.bundle.models import Landmark, Target
from openadapt_flow.verify.field import FIELD_IDENTITY, field_identity, relations
from openadapt_flow.vision.ocr import OcrEngine
from tests.support.screens import Canvas, crop, save_png
from tests.unit.runtime.test_engine import key_env, records, run  # noqa: F401 - key_env is a fixture

pytestmark = pytest.mark.timeout(90)

CELL_W, CELL_H, ROW_Y, HEADER_Y = 110, 40, 200, 100
CELL = (40, ROW_Y, CELL_W, CELL_H)  # the name cell as recorded
CLICK = (40 + CELL_W // 2, ROW_Y + CELL_H // 2)


def table(
    name_x: int, clinic_x: int, name_cell: str = "NULL", clinic_cell: str = "NULL", banner: bool = False
) -> np.ndarray:
    c = Canvas().text(name_x + 10, HEADER_Y, "name").text(clinic_x + 10, HEADER_Y, "clinic")
    c.button(name_x, ROW_Y, name_cell, w=CELL_W, h=CELL_H).button(clinic_x, ROW_Y, clinic_cell, w=CELL_W, h=CELL_H)
    if banner:  # a transient banner over the header row (a "loading" strip): the headers cannot be read
        c.draw.rectangle([0, HEADER_Y - 12, 639, HEADER_Y + 36], fill=(60, 60, 60))
    return c.array()


def header_landmark() -> Landmark:
    """The name header's centre relative to the recorded click, as the recorder writes it (`_column_header`)."""
    words = OcrEngine().find(table(40, 400), "name")
    (m,) = words
    return Landmark(text="name", dx=round(m.centre[0] - CLICK[0]), dy=round(m.centre[1] - CLICK[1]))


def test_text_read_back_in_a_cell_under_another_columns_header_is_not_verified() -> None:
    lm = header_landmark()
    target = Target(template="t/cell.png", region=CELL, text="NULL", landmarks=[lm])
    # the columns changed places: the point typed at (the recorded place) is now the clinic column's cell
    after = table(name_x=160, clinic_x=40, clinic_cell="Eli Stone")
    rels = relations(target, "template", CELL, CLICK, 1.0)
    assert [r.landmark.text for r in rels] == ["name"]  # the header lies outside the crop: the hit proved nothing of it
    check = field_identity(OcrEngine(), after, CLICK, rels, 1.0)
    assert check.kind == FIELD_IDENTITY and not check.ok
    assert "landmark 'name'" in check.detail and "does not hold" in check.detail
    # where the name column still is, the same typing is verified
    ok = field_identity(OcrEngine(), table(name_x=40, clinic_x=160, name_cell="Eli Stone"), CLICK, rels, 1.0)
    assert ok.ok, ok.detail


def test_a_column_header_holds_for_the_cell_rows_lower_in_its_column_only() -> None:
    # the table has grown: the cell typed into is 120 px lower than recorded; its column's header has not moved
    lm = header_landmark().model_copy(update={"column": True})
    rels = relations(Target(template="t/cell.png", region=CELL, landmarks=[lm]), "ocr", None, CLICK, 1.0)
    lower = (CLICK[0], CLICK[1] + 120)

    def grown(name_x: int, clinic_x: int) -> np.ndarray:
        c = Canvas().text(name_x + 10, HEADER_Y, "name").text(clinic_x + 10, HEADER_Y, "clinic")
        c.button(name_x, ROW_Y + 120, "Eli Stone" if name_x == 40 else "NULL", w=CELL_W, h=CELL_H)
        return c.button(clinic_x, ROW_Y + 120, "Eli Stone" if clinic_x == 40 else "NULL", w=CELL_W, h=CELL_H).array()

    assert field_identity(OcrEngine(), grown(40, 160), lower, rels, 1.0).ok
    assert not field_identity(OcrEngine(), grown(160, 40), lower, rels, 1.0).ok


def test_a_label_beside_the_field_is_checked_unless_the_template_hit_took_it_in() -> None:
    target = Target(template="t/f.png", region=(100, 100, 300, 30), text="Vendor", text_offset=(150, 0))
    inside = relations(target, "template", (100, 100, 300, 30), (350, 115), 1.0)
    assert inside == []  # the label's place lies in the matched crop: the match showed label and field together
    by_ocr = relations(target, "ocr", (150, 108, 60, 14), (350, 115), 1.0)
    assert [(r.what, r.landmark.text, r.landmark.dx) for r in by_ocr] == [("label", "Vendor", -150)]
    assert relations(Target(template="t/b.png", region=(0, 0, 10, 10)), "ocr", None, (5, 5), 1.0) == []


def test_a_type_step_into_the_wrong_column_halts_instead_of_verifying(tmp_path) -> None:
    # At the step's resolve a banner hid the headers, so nothing refuted the template hit at the recorded place;
    # the columns had changed places. After typing the banner is gone: the readback reads the value where it was
    # typed, the header over that cell is "clinic" — not verified, the step halts (no wrong row is reported done).
    recorded = table(40, 160)
    root = tmp_path / "b"
    save_png(root / "templates/cell.png", crop(recorded, CELL))
    lm = header_landmark()
    step = {
        "id": "name",
        "intent": "Type the name",
        "action": "type",
        "timeout_s": 1,
        "target": {
            "template": "templates/cell.png",
            "region": list(CELL),
            "text": "NULL",
            "landmarks": [{"text": lm.text, "dx": lm.dx, "dy": lm.dy}],
        },
        "text": "{vendor}",
    }
    flow = {
        "schema": "openadapt-flow/bundle@1",
        "name": "cells",
        "screen": {"width": 640, "height": 480},
        "params": {"vendor": {"type": "string", "required": True}},
        "steps": [step],
    }
    (root / "flow.yaml").write_text(yaml.safe_dump(flow, sort_keys=False))
    after = table(name_x=160, clinic_x=40, clinic_cell="Eli Stone")
    fake = FakeBackend(
        table(name_x=160, clinic_x=40, banner=True), lambda b, ev: b.set_frame(after) if ev[0] == "type" else None
    )
    out = run(tmp_path, root, fake, params={"vendor": "Eli Stone"})
    assert (out.state, out.category) == ("FAILED", "postcondition"), out.message
    assert "not the one the step means" in out.message and "'name'" in out.message
    post = [r["data"] for r in records(out.run_dir) if r["type"] == "postconditions"][-1]
    kinds = {c["kind"]: c["ok"] for c in post["checks"]}
    assert kinds == {"readback": True, FIELD_IDENTITY: False}  # the text was there; the field was not the one
    assert not any(r["type"] == "step_verified" for r in records(out.run_dir))
