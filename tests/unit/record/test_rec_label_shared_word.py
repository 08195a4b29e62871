"""A field's label is a landmark, not a fact: the typed-text filter keeps a fact from holding what the demonstration
typed, but must not take away a label (or a header) the recorded screen showed before anything was typed, even when a
typed value shares its word ("Westside Clinic" typed into the field labelled "Clinic"). Without its label the field's
target is a bare white box that looks like every other empty field; the replay can only halt as ambiguous there."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from PIL import Image, ImageDraw, ImageFont

from openadapt_flow.fixture.gestures import Gesture
from openadapt_flow.fixture.recorder import Batch, Recording
from openadapt_flow.record.compile import compile_bundle
from openadapt_flow.vision.ocr import OcrEngine

pytestmark = pytest.mark.timeout(120)
DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
ROWS = (("Patient", 60), ("Clinic", 130), ("Notes", 200))


def form(values: dict[str, str], note: str = "") -> np.ndarray:
    im = Image.new("RGB", (640, 400), (244, 244, 244))
    d = ImageDraw.Draw(im)
    f = ImageFont.truetype(DEJAVU, 16)
    for label, y in ROWS:
        d.text((40, y), label, font=f, fill=(16, 16, 16))
        d.rectangle([140, y - 8, 440, y + 28], fill=(255, 255, 255), outline=(112, 112, 112), width=2)
        if values.get(label):
            d.text((150, y), values[label], font=f, fill=(16, 16, 16))
    if note:
        d.text((40, 300), note, font=f, fill=(16, 16, 16))
    return np.array(im)


def keys(text: str) -> list[Gesture]:
    return [Gesture("key", key=c, char=c) for c in text]


def click(x: int, y: int) -> list[Gesture]:
    return [Gesture("press", x, y, key="click"), Gesture("click", x, y)]


def test_a_label_shown_before_any_typing_stays_the_fields_landmark_when_a_typed_value_shares_its_word(tmp_path) -> None:
    f0 = form({})
    f1 = form({"Patient": "Maria Lopez"})
    f2 = form({"Patient": "Maria Lopez", "Clinic": "Westside Clinic"})
    f3 = form({"Patient": "Maria Lopez", "Clinic": "Westside Clinic"}, note="Saved referral")
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=f0,
        batches=[
            Batch(before=f0, lead=click(300, 70), edits=keys("Maria Lopez"), mid=f0, after=f1),
            Batch(before=f1, lead=click(300, 140), edits=keys("Westside Clinic"), mid=f1, after=f2),
            Batch(before=f2, lead=[Gesture("key", key="ctrl+s")], after=f3),
        ],
    )
    out = compile_bundle(
        rec, tmp_path / "b", "referral", OcrEngine(), examples={"patient": "Maria Lopez", "clinic": "Westside Clinic"}
    )
    steps = {s["id"]: s for s in yaml.safe_load((out.path / "flow.yaml").read_text())["steps"]}
    clinic = steps["clinic"]["target"]
    assert steps["clinic"]["text"] == "{clinic}"
    assert clinic.get("text") == "Clinic", (clinic, out.warnings)  # its label, read as the field's own text
    assert clinic["region"][0] <= 40, clinic  # the template takes in the label left of the field
    # what was typed is still no landmark, no target text and no fact
    for s in steps.values():
        said = " ".join(str(v) for v in [s.get("target", {}).get("text", ""), *s.get("expect", [])]).casefold()
        assert "westside" not in said and "maria" not in said and "lopez" not in said, s
