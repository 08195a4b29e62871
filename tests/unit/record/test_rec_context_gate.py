"""A consequential click on a dialog's button that shows no typed value beside it (flpsed's Overwrite, issue 35) gets
an identity gate from a word of its dialog (record/gate.py): the replay that finds the button by its label (the OCR
rung, its template missed under a dark theme) confirms it is this dialog's button, and another dialog's button of the
same label fails the gate."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from openadapt_flow.fixture.gestures import Gesture
from openadapt_flow.fixture.recorder import Batch, Recording
from openadapt_flow.record.compile import compile_bundle
from openadapt_flow.verify.screen import ScreenChecks
from openadapt_flow.vision.ocr import OcrEngine

pytestmark = pytest.mark.timeout(90)
DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
OVERWRITE = (395, 245)


def form(value: str = "", saved: bool = False) -> np.ndarray:
    im = Image.new("RGB", (640, 400), (90, 110, 140))  # a desktop around the app's window
    d = ImageDraw.Draw(im)
    f = ImageFont.truetype(DEJAVU, 18)
    d.rectangle([20, 20, 620, 380], fill=(236, 236, 236))
    d.text((40, 60), "Note", font=f, fill=(16, 16, 16))
    d.rectangle([140, 52, 440, 88], fill=(255, 255, 255), outline=(112, 112, 112))
    if value:
        d.text((150, 60), value, font=f, fill=(16, 16, 16))
    if saved:
        d.text((40, 330), "Saved", font=f, fill=(16, 16, 16))
    return np.array(im)


def dialog(message: str) -> np.ndarray:
    """The document hidden by a modal dialog: its message above Cancel and Overwrite."""
    im = Image.new("RGB", (640, 400), (90, 110, 140))
    d = ImageDraw.Draw(im)
    f = ImageFont.truetype(DEJAVU, 16)
    d.rectangle([150, 130, 490, 290], fill=(220, 220, 220), outline=(60, 60, 60))
    d.text((175, 160), message, font=f, fill=(16, 16, 16))
    for x0, label in ((180, "Cancel"), (340, "Overwrite")):
        d.rectangle([x0, 228, x0 + 110, 262], fill=(236, 236, 236), outline=(90, 90, 90))
        d.text((x0 + 12, 236), label, font=f, fill=(16, 16, 16))
    return np.array(im)


@pytest.fixture(scope="module")
def ocr() -> OcrEngine:
    return OcrEngine()


def _recording() -> Recording:
    f0, f1, f2, f3 = form(), form("hello world"), dialog("The file exists."), form("hello world", saved=True)
    change = {"path": "/data/notes.txt", "previous": "", "content": "Note: hello world\n"}
    return Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=f0,
        sor_kind="file",
        sor_path="/data/notes.txt",
        batches=[
            Batch(
                before=f0,
                lead=[Gesture("press", 200, 70, key="click"), Gesture("click", 200, 70)],
                edits=[Gesture("key", key=c, char=c) for c in "hello world"],
                after=f1,
            ),
            Batch(before=f1, lead=[Gesture("key", key="ctrl+s")], after=f2),
            Batch(
                before=f2,
                lead=[Gesture("press", *OVERWRITE, key="click"), Gesture("click", *OVERWRITE)],
                after=f3,
                writes=[("", change)],
            ),
        ],
    )


def test_a_dialog_button_with_no_typed_value_beside_it_is_gated_by_its_dialogs_words(
    tmp_path: Path, ocr: OcrEngine
) -> None:
    out = compile_bundle(_recording(), tmp_path / "b", "notes", ocr, examples={"note": "hello world"})
    (save,) = [s for s in out.steps if s.get("consequential")]
    assert save["target"].get("text") == "Overwrite", save["target"]
    gate = save.get("identity")
    assert gate is not None, save  # on main: no gate, and an OCR-rung replay halts `identity`
    assert gate["text"].lower() in ("the", "file", "exists"), gate  # the dialog's message, not the button's own label
    checks = ScreenChecks(ocr, {})
    # the replay's reading: the recorded dialog passes, at the recorded point and with the dialog moved
    assert checks.identity(dialog("The file exists."), OVERWRITE, tuple(gate["near"]), gate["text"], 1.0).ok
    moved = np.roll(dialog("The file exists."), (-40, 60), axis=(0, 1))
    assert checks.identity(moved, (OVERWRITE[0] + 60, OVERWRITE[1] - 40), tuple(gate["near"]), gate["text"], 1.0).ok
    # another dialog's Overwrite at the same place is not this one: the gate halts there
    other = dialog("Discard all changes?")
    assert not checks.identity(other, OVERWRITE, tuple(gate["near"]), gate["text"], None).ok


def test_a_word_shown_twice_on_the_screen_is_no_gate(ocr: OcrEngine) -> None:
    from openadapt_flow.record.gate import context_gate

    frame = dialog("Exists exists")  # the only words above the button read twice: nothing tells this dialog apart
    assert context_gate(frame, OVERWRITE, (340, 228, 111, 35), ocr, set()) is None
