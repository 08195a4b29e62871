"""The compiler tries what it chooses on its own recording with the replay's code (`record.proof`): a typed field
whose readback cannot read the value on the recorded screen is reported at compile time, and a fact that does not
hold there is replaced by a crop of its area (a literal) or left out (a `{param}`), never written to halt every
replay. Real galculator frames (tests/data/galculator)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from openadapt_flow.fixture.gestures import Gesture
from openadapt_flow.fixture.recorder import Batch, Recording
from openadapt_flow.record.compile import compile_bundle
from openadapt_flow.record.facts import Fact
from openadapt_flow.record.proof import fact_check, proven
from openadapt_flow.verify.screen import Check
from openadapt_flow.vision.ocr import OcrEngine

pytestmark = pytest.mark.timeout(120)
DATA = Path(__file__).resolve().parents[2] / "data" / "galculator"
DISPLAY = (160, 57)


def frame(name: str) -> np.ndarray:
    return np.array(Image.open(DATA / f"{name}.png").convert("RGB"))


@pytest.fixture(scope="module")
def ocr() -> OcrEngine:
    return OcrEngine()


def typed_twelve(after: str) -> Recording:
    """The display clicked, then 1 3 BackSpace 2 typed (the value is 12)."""
    x, y = DISPLAY
    keys = [Gesture("key", key=k, char=k if k != "backspace" else None) for k in ("1", "3", "backspace", "2")]
    b = Batch(
        before=frame("typed-before"),
        lead=[Gesture("press", x, y, key="click"), Gesture("click", x, y)],
        edits=keys,
        after=frame(after),
    )
    return Recording(url="vnc://h:1", settle_s=0.5, initial=frame("typed-before"), batches=[b])


def test_a_typed_display_value_the_replay_reads_back_compiles_without_warning(tmp_path, ocr) -> None:
    compiled = compile_bundle(typed_twelve("typed-12"), tmp_path / "b", "galc", ocr)
    assert [p["example"] for p in compiled.params.values()] == ["12"]
    assert not [w for w in compiled.warnings if "reads '12' back" in w], compiled.warnings


def test_a_typed_value_the_replay_cannot_read_back_is_reported_at_compile_time(tmp_path, ocr) -> None:
    """The recorded screen after the typing does not show 12 (here: it still shows 0): every replay would halt at
    the readback, and `flow record` says so."""
    compiled = compile_bundle(typed_twelve("typed-before"), tmp_path / "b", "galc", ocr)
    assert [w for w in compiled.warnings if "reads '12' back" in w and "expect a halt" in w], compiled.warnings


def test_the_result_fact_is_judged_as_the_replay_judges_it(ocr) -> None:
    doc = {"text_present": "408", "region": [243, 44, 68, 26], "relative_to": "target"}
    assert fact_check(doc, frame("clean-5"), frame("clean-6"), ocr, {}, {}).ok
    assert not fact_check(doc, frame("dirty-5"), frame("dirty-6"), ocr, {}, {}).ok  # 413
    param = {"text_present": "{field}", "region": [243, 44, 68, 26]}
    assert fact_check(param, frame("typed-before"), frame("typed-12"), ocr, {"field": "408"}, {}).ok is False


class Judge:
    """A stand-in for the replay's check: the facts named in `fails` do not hold."""

    def __init__(self, fails: set[str]) -> None:
        self.fails, self.seen = fails, []

    def __call__(self, doc: dict[str, Any]) -> Check:
        self.seen.append(doc)
        name = str(
            doc.get("text_present")
            or doc.get("text_absent")
            or doc.get("template_present")
            or doc.get("region_changed")
        )
        return Check("x", name, name not in self.fails)


def doc_of(f: Fact, paired: bool) -> dict[str, Any]:
    if f.kind == "text_absent" and not paired:
        return {f.kind: f.text}
    return {f.kind: f.text if f.text is not None else list(f.region), "region": list(f.region)}


def crop(f: Fact) -> Fact:
    return Fact("template_present", "templates/crop.png", f.region)


def test_an_unreadable_literal_is_checked_by_its_crop_and_an_unreadable_param_is_left_out() -> None:
    warned: list[str] = []
    facts = [
        Fact("text_present", "408", (1, 2, 3, 4)),
        Fact("text_present", "{name}", (5, 6, 7, 8)),
        Fact("text_present", "Saved", (9, 9, 9, 9)),
    ]
    out = proven(facts, doc_of, Judge({"408", "{name}"}), crop, warned.append)
    assert out == [Fact("template_present", "templates/crop.png", (1, 2, 3, 4)), facts[2]]
    assert len(warned) == 2 and "crop" in warned[0] and "left out" in warned[1]


def test_a_text_absent_is_judged_as_written_once_its_pair_is_gone() -> None:
    """Its doc carries a region only beside a text_present: with the text_present left out, it is judged (and
    written) on the whole frame."""
    judge, warned = Judge({"{name}"}), []
    facts = [Fact("text_present", "{name}", (5, 6, 7, 8)), Fact("text_absent", "Unsaved", (1, 1, 5, 5))]
    out = proven(facts, doc_of, judge, crop, warned.append)
    assert out == [facts[1]]
    assert {"text_absent": "Unsaved"} in judge.seen


def test_digits_typed_with_no_field_clicked_are_checked_where_they_appeared(tmp_path, ocr) -> None:
    """1 2 typed at the focus show in the bold display, which only the line reading reads: the step checks a crop
    of them there (the replay's text check cannot read them), and that crop is not found on a display showing 56."""
    keys = [Gesture("key", key=k, char=k) for k in "12"]
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.5,
        initial=frame("typed-before"),
        batches=[Batch(before=frame("typed-before"), edits=keys, after=frame("typed-12"))],
    )
    compiled = compile_bundle(rec, tmp_path / "b", "galc", ocr)
    expect = compiled.steps[0].get("expect", [])
    assert len(expect) == 1 and "template_present" in expect[0], compiled.steps[0]
    crops = {
        expect[0]["template_present"]: np.array(
            Image.open(compiled.path / expect[0]["template_present"]).convert("RGB")
        )
    }
    assert fact_check(expect[0], frame("typed-before"), frame("typed-12"), ocr, {}, crops).ok
    assert not fact_check(expect[0], frame("typed-56-before"), frame("typed-56-halt"), ocr, {}, crops).ok
    assert not fact_check(expect[0], frame("typed-before"), frame("typed-before"), ocr, {}, crops).ok
