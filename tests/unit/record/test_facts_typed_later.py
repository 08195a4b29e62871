"""No fact from text typed later (issue 35, finding 1): a document typed line by line, Enter between the lines. A
recording that holds Enter together with the next line as one input (one made before the recorder cut at Enter)
judged Enter on the screen after the next line was typed, and gave `enter` the fact `text_present: Pediatrics`, a
word of the clinic value the NEXT step types: no replay could meet it. No fact holds a word of any param's value or
of anything the demonstration typed, whichever step typed it; and the recorder now cuts typing after Enter/Tab
into an input of its own, as after a click."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from PIL import Image, ImageDraw, ImageFont

from openadapt_flow.fixture.gestures import Gesture
from openadapt_flow.fixture.recorder import Batch, Recorder, Recording
from openadapt_flow.record.compile import compile_bundle
from openadapt_flow.vision.ocr import OcrEngine

pytestmark = pytest.mark.timeout(120)
MONO = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
SCREEN = (800, 500)
LINE, TOP, LEFT = 20, 60, 8
CLICK = (60, 69)
ENTER = 0xFF0D


def editor(lines: list[str], caret: tuple[int, int], title: str = "Untitled") -> np.ndarray:
    im = Image.new("RGB", SCREEN, (0, 0, 0))
    d = ImageDraw.Draw(im)
    d.rectangle([0, 0, 699, 449], fill=(236, 236, 236))
    font = ImageFont.truetype(MONO, 15)
    d.text((8, 12), title, font=font, fill=(0, 0, 0))
    d.rectangle([0, 45, 699, 449], fill=(255, 255, 255))
    for i, text in enumerate(lines):
        d.text((LEFT, TOP + i * LINE), text, font=font, fill=(0, 0, 0))
    line, col = caret
    x = LEFT + int(font.getlength("x" * col))
    d.rectangle([x, TOP + line * LINE - 1, x + 1, TOP + line * LINE + 16], fill=(0, 0, 0))
    return np.array(im)


def keys(text: str) -> list[Gesture]:
    return [Gesture("key", key=c, char=c) for c in text]


def test_no_fact_of_a_step_holds_a_word_a_later_step_types(tmp_path) -> None:
    start = editor([""], (0, 0))
    line1 = editor(["Patient: Maria Lopez"], (0, 20))
    both = editor(["Patient: Maria Lopez", "Clinic: Harbor Pediatrics"], (1, 25))
    saved = editor(["Patient: Maria Lopez", "Clinic: Harbor Pediatrics"], (1, 25), title="notes.txt saved")
    click = [Gesture("press", *CLICK, key="click"), Gesture("click", *CLICK)]
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=start,
        batches=[
            Batch(before=start, lead=click, edits=keys("Patient: Maria Lopez"), after=line1),
            # Enter and the next line as one input, with no screen between them (mid): as the recorder cut it
            Batch(
                before=line1, lead=[Gesture("key", key="enter")], edits=keys("Clinic: Harbor Pediatrics"), after=both
            ),
            Batch(before=both, lead=[Gesture("key", key="ctrl+s")], after=saved),
        ],
    )
    out = compile_bundle(
        rec, tmp_path / "b", "notes", OcrEngine(), examples={"patient": "Maria Lopez", "clinic": "Harbor Pediatrics"}
    )
    steps = yaml.safe_load((out.path / "flow.yaml").read_text())["steps"]
    typed_words = {"patient", "maria", "lopez", "clinic", "harbor", "pediatrics"}
    for s in steps:
        for fact in s.get("expect", []):
            said = str(fact.get("text_present") or fact.get("text_absent") or "").casefold()
            if said and "{" not in said:  # a {param} is read back with the replay's value: that is no recorded word
                assert not typed_words & set(said.replace(":", " ").split()), (s["id"], fact)


class _Screen:
    """A live app that settles at once; what it shows does not matter here."""

    url = "vnc://h:1"

    def __init__(self) -> None:
        self.frame = np.zeros((40, 60, 3), np.uint8)

    def settled(self, quiet_s, since, timeout):
        return self.frame.copy()

    def snapshot(self):
        return 0, self.frame.copy()

    def pointer(self, x, y, mask):
        pass

    def key(self, keysym, down):
        self.frame[0, 0, 0] = (self.frame[0, 0, 0] + 1) % 255


@pytest.mark.parametrize("sym,name", [(ENTER, "enter"), (0xFF09, "tab")])
def test_the_recorder_cuts_typing_after_enter_or_tab_into_an_input_of_its_own(sym, name) -> None:
    r = Recorder(_Screen())
    for k in [ord("a"), sym, ord("b"), ord("c")]:
        r.key(k, True)
        r.key(k, False)
    rec = r.finish()
    shape = [([g.key for g in b.lead], "".join(g.char or "" for g in b.edits)) for b in rec.batches]
    assert shape == [([], "a"), ([name], ""), ([], "bc")], shape
    assert all(b.after is not None for b in rec.batches)


def test_a_key_cut_from_the_typing_after_it_is_still_named_by_the_field_it_moved_to(tmp_path) -> None:
    from tests.unit.record.test_rec_words import form

    f0, f1 = form(), form("ACME Corp")
    moved, f2 = form("ACME Corp", focus="amount"), form("ACME Corp", "1250.50", focus="amount")
    f3 = form("ACME Corp", "1250.50", focus="amount", note="Saved invoice")
    click = [Gesture("press", 300, 70, key="click"), Gesture("click", 300, 70)]
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=f0,
        batches=[
            Batch(before=f0, lead=click, edits=keys("ACME Corp"), after=f1),
            Batch(before=f1, lead=[Gesture("key", key="tab")], after=moved),  # as the recorder now cuts them
            Batch(before=moved, edits=keys("1250.50"), after=f2),
            Batch(before=f2, lead=[Gesture("key", key="ctrl+s")], after=f3),
        ],
    )
    out = compile_bundle(
        rec, tmp_path / "b", "invoice", OcrEngine(), examples={"vendor": "ACME Corp", "amount": "1250.50"}
    )
    doc = yaml.safe_load((out.path / "flow.yaml").read_text())
    assert [s["id"] for s in doc["steps"]] == ["vendor", "tab-to-amount", "amount", "save"], out.warnings
    assert [s["text"] for s in doc["steps"] if s["action"] == "type"] == ["{vendor}", "{amount}"]
