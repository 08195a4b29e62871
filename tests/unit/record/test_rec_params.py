"""Which typed values vary (finding 2 of issue 23): `flow record --param NAME=VALUE` makes every occurrence of an
example value in typed text `{NAME}`, inside a longer line too, the rest literal; without it every typed run that
shows on the screen is a param of its own (consistent, and said in a warning). An editor's page: "Patient: …",
Enter, "Clinic: …", ctrl+s into a watched file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from PIL import Image, ImageDraw, ImageFont

from openadapt_flow.bundle.loader import load_bundle
from openadapt_flow.cli.record import parse_examples
from openadapt_flow.errors import UsageError
from openadapt_flow.fixture.gestures import Gesture
from openadapt_flow.fixture.recorder import Batch, Recording
from openadapt_flow.record.compile import compile_bundle
from openadapt_flow.vision.ocr import OcrEngine

pytestmark = pytest.mark.timeout(120)
DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
PATIENT, CLINIC = "Maria Lopez", "Harbor Pediatrics"
LINE1, LINE2 = f"Patient: {PATIENT}", f"Clinic: {CLINIC}"


def page(*lines: str) -> np.ndarray:
    """A text editor's window: a menu bar, and the page with the given lines."""
    im = Image.new("RGB", (640, 400), (236, 236, 236))
    d = ImageDraw.Draw(im)
    f = ImageFont.truetype(DEJAVU, 15)
    d.text((10, 6), "File   Edit   Search", font=f, fill=(20, 20, 20))
    d.rectangle([0, 28, 639, 399], fill=(255, 255, 255), outline=(150, 150, 150))
    for n, line in enumerate(lines):
        d.text((8, 36 + 22 * n), line, font=f, fill=(20, 20, 20))
    return np.array(im)


def keys(text: str) -> list[Gesture]:
    return [Gesture("key", key=c, char=c) for c in text]


def recording(tmp_path: Path) -> Recording:
    doc = tmp_path / "referral.txt"
    f0, f1, f2 = page(), page(LINE1), page(LINE1, LINE2)
    saved = {"path": str(doc), "previous": "", "content": f"{LINE1}\n{LINE2}"}
    click = [Gesture("press", 300, 250, key="click"), Gesture("click", 300, 250)]
    return Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=f0,
        sor_kind="file",
        sor_path=str(doc),
        batches=[
            Batch(before=f0, lead=click, edits=keys(LINE1), after=f1),
            Batch(before=f1, lead=[Gesture("key", key="enter")], edits=keys(LINE2), after=f2),
            Batch(before=f2, lead=[Gesture("key", key="ctrl+s")], after=f2.copy(), writes=[("", saved)]),
        ],
    )


@pytest.fixture(scope="module")
def ocr() -> OcrEngine:
    return OcrEngine()


def typed(doc: dict) -> list[str]:
    return [s["text"] for s in doc["steps"] if s["action"] == "type"]


def test_each_example_value_becomes_its_param_inside_the_typed_lines(tmp_path: Path, ocr: OcrEngine) -> None:
    out = compile_bundle(
        recording(tmp_path), tmp_path / "b", "referral", ocr, examples={"patient": PATIENT, "clinic": CLINIC}
    )
    doc = yaml.safe_load((out.path / "flow.yaml").read_text())
    assert typed(doc) == ["Patient: {patient}", "Clinic: {clinic}"]
    assert {k: v["example"] for k, v in doc["params"].items()} == {"patient": PATIENT, "clinic": CLINIC}
    save = doc["steps"][-1]
    assert save["consequential"] is True and save["effect"]["kind"] == "file"
    assert save["effect"]["changes"] == [{"added": ["Patient: {patient}", "Clinic: {clinic}"]}], save["effect"]
    load_bundle(out.path)  # the bundle loads: every placeholder names a declared param
    assert not any("each typed run is one param" in w for w in out.warnings)


def test_without_params_every_typed_run_is_a_param_and_a_warning_says_how_to_name_them(
    tmp_path: Path, ocr: OcrEngine
) -> None:
    out = compile_bundle(recording(tmp_path), tmp_path / "b", "referral", ocr)
    doc = yaml.safe_load((out.path / "flow.yaml").read_text())
    texts = typed(doc)
    assert len(texts) == 2 and all(t.startswith("{") and t.endswith("}") for t in texts), texts  # both, not one
    assert {v["example"] for v in doc["params"].values()} == {LINE1, LINE2}
    assert any("each typed run is one param" in w and "--param NAME=VALUE" in w for w in out.warnings), out.warnings


def test_an_example_never_typed_is_named_in_a_warning_and_literal_braces_stay_text(
    tmp_path: Path, ocr: OcrEngine
) -> None:
    out = compile_bundle(
        recording(tmp_path), tmp_path / "b", "referral", ocr, examples={"patient": PATIENT, "doctor": "Dr. Who"}
    )
    doc = yaml.safe_load((out.path / "flow.yaml").read_text())
    assert typed(doc) == ["Patient: {patient}", LINE2]  # the clinic line is literal: only the patient varies
    assert "doctor" not in doc["params"]
    assert any("doctor='Dr. Who'" in w and "never typed" in w for w in out.warnings), out.warnings


@pytest.mark.parametrize(
    "bad,why",
    [("patient", "expected NAME=VALUE"), ("1x=a", "expected NAME=VALUE"), ("p=", "empty"), ("p=a", "given twice")],
)
def test_a_malformed_param_option_is_one_usage_error_naming_it(bad: str, why: str) -> None:
    with pytest.raises(UsageError, match=why):
        parse_examples(["p=a", bad] if why == "given twice" else [bad])
