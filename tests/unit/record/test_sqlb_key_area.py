"""A key step (Enter committing a table cell) has no target: an area it changed, at recorded screen pixels, is not
where a moved window or a bigger screen shows it, so it is no fact of the step (the replay checks that the screen
changed anywhere, or the step's effect)."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from openadapt_flow.fixture.gestures import Gesture
from openadapt_flow.fixture.recorder import Batch, Recording
from openadapt_flow.record.compile import compile_bundle
from openadapt_flow.vision.ocr import OcrEngine

pytestmark = pytest.mark.timeout(60)


def test_a_key_step_that_changed_only_an_area_gets_no_area_at_recorded_pixels(tmp_path):
    editing = np.full((200, 320, 3), 240, np.uint8)
    editing[100:126, 50:143] = 255
    editing[101:125, 51:142] = (50, 120, 200)  # an open cell editor's frame, no word in it
    committed = np.full((200, 320, 3), 240, np.uint8)
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=editing,
        batches=[Batch(before=editing, lead=[Gesture("key", key="enter")], after=committed)],
    )
    out = compile_bundle(rec, tmp_path / "b", "commit", OcrEngine())
    (step,) = yaml.safe_load((tmp_path / "b" / "flow.yaml").read_text())["steps"]
    assert step["action"] == "key" and "expect" not in step
    assert any("changing the screen anywhere" in w for w in out.warnings)


def test_a_key_after_typing_into_a_field_keeps_its_area_placed_from_that_field(tmp_path):
    form = np.full((200, 320, 3), 240, np.uint8)
    form[100:126, 50:143] = 255  # an empty field (a table cell)
    form[100, 50:143] = form[125, 50:143] = 90
    form[100:126, 50] = form[100:126, 142] = 90
    editing = form.copy()
    editing[101:125, 51:142] = (50, 120, 200)  # its editor open, typed into (no word a test OCR must read)
    committed = form.copy()
    committed[104:122, 60:90] = 30  # the committed value, drawn plainly
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=form,
        batches=[
            Batch(
                before=form,
                lead=[Gesture("press", 96, 112, key="click"), Gesture("click", 96, 112)],
                edits=[Gesture("key", key="x", char="x")],
                mid=editing,
                after=editing,
            ),
            Batch(before=editing, lead=[Gesture("key", key="enter")], after=committed),
        ],
    )
    compile_bundle(rec, tmp_path / "b", "commit", OcrEngine())
    typed, enter = yaml.safe_load((tmp_path / "b" / "flow.yaml").read_text())["steps"]
    assert typed["action"] == "type" and "target" in typed
    (fact,) = enter["expect"]
    assert "region_changed" in fact and fact["relative_to"] == "target"
    assert fact["changed_min"] >= 0.3  # most of the cell was redrawn: a key a popup took would not pass
