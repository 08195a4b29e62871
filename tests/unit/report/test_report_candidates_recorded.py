"""The ladder records every look-alike it could not tell apart (`Evidence.candidates`), which the report marks: the
template rung's two peaks, the OCR rung's several reads, and the places a label's landmarks fit equally well."""

from __future__ import annotations

import pytest

from openadapt_flow.bundle.models import Landmark, Target
from openadapt_flow.ladder.ladder import Ladder
from openadapt_flow.report.halt import candidates
from openadapt_flow.vision.ocr import OcrEngine
from tests.unit.ladder.synthetic import Button, Label, around, button_box, crop, draw

pytestmark = pytest.mark.timeout(60)

SIZE = (1920, 1080)


@pytest.fixture(scope="module")
def engine() -> OcrEngine:
    return OcrEngine()


def evidence_json(res) -> list[dict]:
    return [e.to_json() for e in res.evidence]


def test_two_identical_buttons_are_both_recorded_with_their_click_points(engine: OcrEngine) -> None:
    save, twin = Button("Save", 600, 520), Button("Save", 600, 440)
    region = around(button_box(save))
    live = draw([save, twin])
    t = Target(template="t/save.png", region=region, text="Save")
    res = Ladder({"t/save.png": crop(draw([save]), region)}, SIZE, ocr=engine).resolve(live, t)
    assert res.category == "ambiguous"
    tmpl = next(e for e in res.evidence if e.rung.startswith("template") and e.verdict == "ambiguous")
    assert tmpl.candidates is not None and sorted(c.box for c in tmpl.candidates) == sorted(
        [around(button_box(save)), around(button_box(twin))]
    )  # the crop (the button and a margin) found at each
    marked = candidates(evidence_json(res))
    assert len(marked) == 2 and all(c["box"][1] <= c["point"][1] < c["box"][1] + c["box"][3] for c in marked)


def test_several_reads_of_a_label_are_all_recorded(engine: OcrEngine) -> None:
    live = draw([], [Label("Amount", 300, 300), Label("Amount", 300, 700)])
    res = Ladder({}, SIZE, ocr=engine).resolve(live, Target(text="Amount", region=(1500, 900, 60, 14)))
    assert res.category == "ambiguous"
    marked = candidates(evidence_json(res))
    assert [c["box"][1] // 100 for c in marked] == [3, 7] and all(c["scores"]["ocr"] > 0.9 for c in marked)


def test_places_the_landmarks_fit_equally_are_all_recorded(engine: OcrEngine) -> None:
    live = draw([], [Label("Amount", 300, 300), Label("Amount", 300, 700)])
    t = Target(landmarks=[Landmark(text="Amount", dx=-100, dy=0)], region=(1500, 900, 40, 14))  # recorded elsewhere
    res = Ladder({}, SIZE, ocr=engine).resolve(live, t)
    assert res.category == "ambiguous"
    ev = next(e for e in res.evidence if e.verdict == "ambiguous")
    assert ev.candidates is not None and len(ev.candidates) == 2
    assert sorted(c.point[1] // 100 for c in ev.candidates) == [3, 7]
