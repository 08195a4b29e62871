"""The compiler's side of `--watch-file` and of lost input: a watched file's change becomes a file effect that counts
the typed param; a step whose input left the screen as it was is named in a warning; old recordings still load."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from openadapt_flow.bundle.effect import Effect
from openadapt_flow.errors import ConfigError
from openadapt_flow.fixture.gestures import Gesture
from openadapt_flow.fixture.recorder import Batch, Recording
from openadapt_flow.fixture.recording_io import load_recording, save_recording
from openadapt_flow.fixture.sor import FileWatch
from openadapt_flow.record.compile import compile_bundle
from openadapt_flow.record.values import file_effect
from openadapt_flow.verify.effects import make_reader
from openadapt_flow.vision.ocr import OcrEngine

pytestmark = pytest.mark.timeout(60)
DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def form(value: str = "", note: str = "") -> np.ndarray:
    im = Image.new("RGB", (640, 400), (244, 244, 244))
    d = ImageDraw.Draw(im)
    f = ImageFont.truetype(DEJAVU, 18)
    d.text((40, 60), "Note", font=f, fill=(16, 16, 16))
    d.rectangle([140, 52, 440, 88], fill=(255, 255, 255), outline=(112, 112, 112))
    if value:
        d.text((150, 60), value, font=f, fill=(16, 16, 16))
    d.rectangle([46, 190, 120, 230], fill=(220, 220, 220), outline=(112, 112, 112))
    d.text((60, 200), "Save", font=f, fill=(16, 16, 16))
    if note:
        d.text((300, 300), note, font=f, fill=(16, 16, 16))
    return np.array(im)


FIELD = [Gesture("press", 200, 70, key="click"), Gesture("click", 200, 70)]
SAVE = [Gesture("press", 80, 210, key="click"), Gesture("click", 80, 210)]


@pytest.fixture(scope="module")
def ocr() -> OcrEngine:
    return OcrEngine()


def test_the_watched_file_reports_each_change_once_with_what_was_there(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    watch = FileWatch(path)
    assert watch.changes() == []
    path.write_text("Note: hi\n")
    assert watch.changes() == [("", {"path": str(path), "previous": None, "content": "Note: hi\n"})]
    assert watch.changes() == []
    path.write_text("Note: hi\nNote: ho\n")
    (change,) = watch.changes()
    assert change[1]["previous"] == "Note: hi\n"


def test_a_step_that_changed_the_watched_file_gets_a_file_effect_declaring_the_whole_change(
    tmp_path: Path, ocr: OcrEngine
) -> None:
    f0, f1, f2 = form(), form("hello world"), form("hello world", "Saved")
    change = {"path": "/data/notes.txt", "previous": "Note: old\n", "content": "Note: old\nNote: hello world\n"}
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=f0,
        sor_kind="file",
        sor_path="/data/notes.txt",
        batches=[
            Batch(before=f0, lead=FIELD, edits=[Gesture("key", key=c, char=c) for c in "hello world"], after=f1),
            Batch(before=f1, lead=SAVE, after=f2, writes=[("", change)]),
        ],
    )
    out = compile_bundle(rec, tmp_path / "b", "notes", ocr)
    (param,) = out.params
    save = out.steps[1]
    assert save["consequential"] is True
    # the line diff of the save, the typed value as its param: an append at the end names no line above it
    assert save["effect"] == {
        "kind": "file",
        "path": "/data/notes.txt",
        "changes": [{"added": ["Note: {" + param + "}"]}],
    }
    assert Effect.model_validate(save["effect"]).changes is not None  # a bundle loads it


def test_a_file_effect_counts_its_contains_with_the_params_filled(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text('Note: goodbye moon\n{"a": 1}\n')
    effect = Effect(kind="file", path=str(path), contains="{note}")
    assert make_reader(effect, {"note": "goodbye moon"})().value == 1
    assert (
        make_reader(Effect(kind="file", path=str(path), contains='{"a": 1}'), {})().value == 1
    )  # other braces are text
    with pytest.raises(ConfigError, match=r"contains uses \{other\}"):
        make_reader(Effect(kind="file", path=str(path), contains="{other}"), {"note": "x"})


def test_a_step_whose_input_left_the_screen_as_it_was_is_named_in_a_warning(tmp_path: Path, ocr: OcrEngine) -> None:
    f0, f1 = form(), form("", "Saved")
    pressed = f0.copy()
    pressed[200:220, 60:110] = (140, 190, 245)  # Save lit under the pointer: the screen before and after the press
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=f0,
        batches=[
            Batch(before=f0, pressed=pressed, lead=SAVE, after=pressed.copy(), later=f0),  # the click was lost
            Batch(before=f0, lead=SAVE, after=f1),
        ],
    )
    out = compile_bundle(rec, tmp_path / "b", "lost", ocr)
    first, second = (s["id"] for s in out.steps)
    assert any(first in w and "did not change" in w for w in out.warnings), out.warnings
    assert not any(second in w and "did not change" in w for w in out.warnings)


def test_a_recording_saved_before_pressed_and_later_existed_still_loads_and_compiles(
    tmp_path: Path, ocr: OcrEngine
) -> None:
    f0, f1 = form(), form("", "Saved")
    rec = Recording(url="vnc://h:1", settle_s=0.3, initial=f0, batches=[Batch(before=f0, lead=SAVE, after=f1)])
    save_recording(rec, tmp_path / "rec")
    doc = json.loads((tmp_path / "rec" / "recording.json").read_text())
    for b in doc["batches"]:  # as today's code wrote it before these fields
        del b["pressed"], b["later"]
    del doc["sor_path"]
    (tmp_path / "rec" / "recording.json").write_text(json.dumps(doc))
    loaded = load_recording(tmp_path / "rec")
    assert loaded.batches[0].pressed is None and loaded.batches[0].later is None
    assert compile_bundle(loaded, tmp_path / "b", "old", ocr).steps[0]["action"] == "click"
    shutil.rmtree(tmp_path / "rec")


class _Field:
    def __init__(self, param: str, value: str) -> None:
        self.param, self.value = param, value


def test_a_recorded_write_inside_a_catalogue_declares_its_hunk_and_the_line_above_it() -> None:
    po = 'msgid "Open"\nmsgstr ""\n\nmsgid "Save"\nmsgstr ""\n'
    change = {"path": "/data/es.po", "previous": po, "content": po.replace('msgstr ""\n\n', 'msgstr "Abrir"\n\n')}
    assert file_effect(change, [_Field("word", "Abrir")]) == {
        "kind": "file",
        "path": "/data/es.po",
        "changes": [{"removed": ['msgstr ""'], "added": ['msgstr "{word}"'], "after": 'msgid "Open"'}],
    }


def test_a_recorded_write_keeps_lines_without_a_value_literal_and_two_values_as_two_params() -> None:
    change = {
        "path": "/d/a.txt",
        "previous": "Visits\n",
        "content": "Visits\n---\nPatient: Maria Lopez\nClinic: Harbor Pediatrics\n",
    }
    effect = file_effect(change, [_Field("patient", "Maria Lopez"), _Field("clinic", "Harbor Pediatrics")])
    assert effect == {
        "kind": "file",
        "path": "/d/a.txt",
        "changes": [{"added": ["---", "Patient: {patient}", "Clinic: {clinic}"]}],
    }


def test_a_write_holding_no_typed_value_falls_back_as_before() -> None:
    # the app saved something derived from the typing (upper-cased): no hunk to template, nothing to count
    change = {"path": "/d/a.txt", "previous": "x\n", "content": "x\nHELLO\n"}
    assert file_effect(change, [_Field("word", "hello")]) is None
    # a line holding a {name} of its own would read as a placeholder: the count of the value instead
    change = {"path": "/d/a.txt", "previous": "x\n", "content": "x\n{brace} hello\n"}
    assert file_effect(change, [_Field("word", "hello")]) == {
        "kind": "file",
        "path": "/d/a.txt",
        "contains": "{word}",
        "expect": {"increase_by": 1},
    }
