"""The compiler checks what a demonstration was for: the result a final or consequential step shows, numbers
included, placed relative to the target; a step with nothing it can check is reported. Real galculator frames
(tests/data/galculator: 12 × 34 = on a clean start, and the same clicks after "5 +")."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from PIL import Image

from openadapt_flow.bundle.loader import load_bundle
from openadapt_flow.fixture.gestures import Gesture
from openadapt_flow.fixture.recorder import Batch, Recording
from openadapt_flow.record.compile import compile_bundle
from openadapt_flow.verify.screen import Anchor, ScreenChecks
from openadapt_flow.vision.ocr import OcrEngine

pytestmark = pytest.mark.timeout(120)
DATA = Path(__file__).resolve().parents[2] / "data" / "galculator"


def frame(name: str) -> np.ndarray:
    return np.array(Image.open(DATA / f"{name}.png").convert("RGB"))


@pytest.fixture(scope="module")
def ocr() -> OcrEngine:
    return OcrEngine()


def clean_recording() -> Recording:
    """1 2 × 3 4 = clicked on a clean start."""
    clicks = json.loads((DATA / "clicks.json").read_text())  # [key, x, y] for 1 2 × 3 4 =
    batches = [
        Batch(
            before=frame(f"clean-{i}"),
            lead=[Gesture("press", x, y, key="click"), Gesture("click", x, y)],
            after=frame(f"clean-{i + 1}"),
        )
        for i, (_, x, y) in enumerate(clicks)
    ]
    return Recording(url="vnc://h:1", settle_s=0.5, initial=frame("clean-0"), batches=batches)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory, ocr: OcrEngine):
    return compile_bundle(clean_recording(), tmp_path_factory.mktemp("galc") / "b", "galc", ocr)


def test_the_final_step_of_a_calculation_checks_the_number_it_showed(compiled) -> None:
    last = yaml.safe_load((compiled.path / "flow.yaml").read_text())["steps"][-1]
    results = [f for f in last.get("expect", []) if f.get("text_present") == "408"]
    assert results, f"the '=' step checks {last.get('expect')}, not the result 408"
    assert results[0]["relative_to"] == "target"
    assert not any("region_changed" in f for f in last["expect"])  # the result replaces the weaker "something changed"


def test_a_dirty_start_that_shows_another_result_fails_the_check(compiled, ocr: OcrEngine) -> None:
    step = load_bundle(compiled.path).model.steps[-1]
    checks = ScreenChecks(ocr, {})
    recorded = step.target.recorded_point()
    anchor = Anchor(recorded, recorded, (1.0, 1.0))
    # started showing "5 +", the same clicks end at 413: the step must not verify
    dirty = checks.postconditions(
        step.expect, [pc.text for pc in step.expect], frame("dirty-6"), frame("dirty-5"), anchor
    )
    assert not all(c.ok for c in dirty)
    clean = checks.postconditions(
        step.expect, [pc.text for pc in step.expect], frame("clean-6"), frame("clean-5"), anchor
    )
    assert all(c.ok for c in clean), [c.to_json() for c in clean]


def test_a_step_that_changed_nothing_checks_what_the_last_change_still_shows_and_is_reported(compiled) -> None:
    steps = yaml.safe_load((compiled.path / "flow.yaml").read_text())["steps"]
    times = steps[2]  # the "×" click: galculator's display does not change, it still shows 12
    (fact,) = times["expect"]  # OCR cannot read the bold display's "12": a crop of it must still match
    crop = np.array(Image.open(compiled.path / fact["template_present"]).convert("RGB"))
    x, y, w, h = fact["region"]
    assert np.array_equal(crop, frame("clean-3")[y : y + h, x : x + w]) and fact["relative_to"] == "target"
    assert x <= 269 and x + w >= 311  # the display digits (where "1", "12" appeared)
    assert any(f"step {times['id']!r}" in w and "did not change" in w for w in compiled.warnings), compiled.warnings


def test_a_step_with_nothing_it_can_check_is_reported_by_name(tmp_path, ocr) -> None:
    still = form()
    click = [Gesture("press", 80, 210, key="click"), Gesture("click", 80, 210)]
    rec = Recording(
        url="vnc://h:1", settle_s=0.3, initial=still, batches=[Batch(before=still, lead=click, after=still.copy())]
    )
    out = compile_bundle(rec, tmp_path / "b", "noop", ocr)
    (step,) = out.steps
    assert "expect" not in step
    assert any(f"step {step['id']!r}" in w and "nothing" in w for w in out.warnings), out.warnings


DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def form(value: str = "", message: str = "") -> np.ndarray:
    from PIL import ImageDraw, ImageFont

    im = Image.new("RGB", (640, 400), (244, 244, 244))
    d = ImageDraw.Draw(im)
    f = ImageFont.truetype(DEJAVU, 18)
    d.text((40, 60), "Vendor", font=f, fill=(16, 16, 16))
    d.rectangle([140, 52, 440, 88], fill=(255, 255, 255), outline=(112, 112, 112))
    if value:
        d.text((150, 60), value, font=f, fill=(16, 16, 16))
    d.rectangle([46, 190, 120, 230], fill=(220, 220, 220), outline=(112, 112, 112))
    d.text((60, 200), "Save", font=f, fill=(16, 16, 16))
    if message:
        d.text((160, 300), message, font=ImageFont.truetype(DEJAVU, 24), fill=(16, 16, 16))
    return np.array(im)


def test_a_result_that_is_a_typed_value_is_checked_as_its_param_and_an_id_is_not_checked(tmp_path, ocr) -> None:
    field = [Gesture("press", 200, 70, key="click"), Gesture("click", 200, 70)]
    save = [Gesture("press", 80, 210, key="click"), Gesture("click", 80, 210)]
    f0, f1, f2 = form(), form("Globex"), form("", "Posted Globex #17")
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=f0,
        sor_kind="sqlite",
        batches=[
            Batch(before=f0, lead=field, edits=[Gesture("key", key=c, char=c) for c in "Globex"], after=f1),
            Batch(before=f1, lead=save, after=f2, writes=[("invoices", {"id": 17, "vendor": "Globex"})]),
        ],
    )
    out = compile_bundle(rec, tmp_path / "b", "post", ocr)
    saved = out.steps[-1]
    texts = [f.get("text_present") for f in saved["expect"]]
    assert "{vendor}" in texts, saved["expect"]  # replayed with another vendor, the check follows the param
    assert not any(t and "17" in t for t in texts)  # the row id the store made differs every run
    assert load_bundle(out.path).model.steps[-1].expect


def test_text_typed_at_the_focus_is_read_back_where_it_showed(tmp_path, ocr) -> None:
    f0, f1 = form(), form("Initech")
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=f0,
        batches=[Batch(before=f0, edits=[Gesture("key", key=c, char=c) for c in "Initech"], after=f1)],
    )
    (step,) = compile_bundle(rec, tmp_path / "b", "focus", ocr).steps
    assert step["action"] == "type" and "target" not in step
    (fact,) = step["expect"]
    assert fact["text_present"] == "Initech" and "relative_to" not in fact
    x, y, w, h = fact["region"]
    assert 140 <= x and x + w <= 440 and 52 <= y and y + h <= 88  # in the field, where the typing went


def test_a_calculation_typed_at_the_keyboard_stays_literal_and_checks_its_result(tmp_path, ocr) -> None:
    # "12*34=" typed with no field clicked: literal keys (nothing says which part would be a param, and a param
    # would make the recorded result wrong for other values), checked by the result the display shows
    keys = [Gesture("key", key=c, char=c) for c in "12*34="]
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.5,
        initial=frame("clean-0"),
        batches=[Batch(before=frame("clean-0"), edits=keys, after=frame("clean-6"))],
    )
    out = compile_bundle(rec, tmp_path / "b", "galc-keys", ocr)
    (step,) = out.steps
    assert (step["action"], step["text"], out.params) == ("type", "12*34=", {})
    assert [f["text_present"] for f in step["expect"]] == ["408"]


def test_a_glyph_is_not_taken_for_a_button_face(compiled) -> None:
    four = compiled.steps[4]["target"]  # the "4" button: its bold glyph is not its face
    assert min(four["region"][2:]) >= 12


def test_a_shown_param_makes_the_result_check_follow_the_replays_values(tmp_path, ocr: OcrEngine) -> None:
    """`--param result=408`, never typed: the '=' step checks `{result}` (a string param, as shown), so a replay
    whose values give another result checks that one; a value never typed nor shown is said, not declared."""
    out = compile_bundle(clean_recording(), tmp_path / "b", "galc", ocr, examples={"result": "408", "nothing": "777"})
    doc = yaml.safe_load((out.path / "flow.yaml").read_text())
    assert doc["params"] == {"result": {"type": "string", "required": True, "example": "408"}}
    assert "{result}" in [f.get("text_present") for f in doc["steps"][-1]["expect"]]
    assert any("nothing='777'" in w and "never typed" in w for w in out.warnings), out.warnings
    step = load_bundle(out.path).model.steps[-1]
    recorded = step.target.recorded_point()
    anchor, checks = Anchor(recorded, recorded, (1.0, 1.0)), ScreenChecks(ocr, {})
    for value, holds in (("408", True), ("413", False)):
        got = checks.postconditions(step.expect, [value] * len(step.expect), frame("clean-6"), frame("clean-5"), anchor)
        assert all(c.ok for c in got) is holds, (value, [c.to_json() for c in got])
