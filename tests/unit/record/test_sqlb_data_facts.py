"""A table's rows are data: what a step showed of them ("Lovelace" after Browse Data) may be elided, reordered or
other rows at replay. The watched store's text at the start of the recording is never a step's fact."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest
import yaml
from PIL import Image, ImageDraw, ImageFont

from openadapt_flow.fixture.gestures import Gesture
from openadapt_flow.fixture.recorder import Batch, Recording
from openadapt_flow.fixture.recording_io import load_recording, save_recording
from openadapt_flow.fixture.sor import SqliteWatch
from openadapt_flow.record.compile import compile_bundle
from openadapt_flow.vision.ocr import OcrEngine

pytestmark = pytest.mark.timeout(60)
DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def screen(words: list[tuple[str, int, int]]) -> np.ndarray:
    im = Image.new("RGB", (640, 400), (244, 244, 244))
    d = ImageDraw.Draw(im)
    font = ImageFont.truetype(DEJAVU, 18)
    d.rectangle([40, 20, 160, 50], fill=(220, 220, 220), outline=(112, 112, 112))
    d.text((54, 26), "Browse", font=font, fill=(16, 16, 16))
    for text, x, y in words:
        d.text((x, y), text, font=font, fill=(16, 16, 16))
    return np.array(im)


def test_the_store_text_present_when_recording_began_is_kept_with_the_recording(tmp_path):
    db = tmp_path / "c.db"
    with sqlite3.connect(db) as c:
        c.execute("CREATE TABLE patients(id INTEGER PRIMARY KEY, name TEXT, clinic TEXT)")
        c.execute("INSERT INTO patients(name, clinic) VALUES ('Ada Lovelace', 'North')")
    watch = SqliteWatch(db)
    assert watch.data_values() == ["Ada Lovelace", "North"]
    frame = screen([])
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=frame,
        batches=[Batch(before=frame, after=frame)],
        data_values=watch.data_values(),
    )
    save_recording(rec, tmp_path / "rec")
    assert load_recording(tmp_path / "rec").data_values == ["Ada Lovelace", "North"]


def test_a_word_of_the_stores_rows_is_no_fact_of_the_step_that_showed_it(tmp_path):
    before = screen([("Structure", 300, 100)])
    after = screen([("Lovelace", 300, 200), ("Filter", 300, 300)])
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=before,
        data_values=["Ada Lovelace", "North"],
        batches=[
            Batch(before=before, lead=[Gesture("press", 90, 35, key="click"), Gesture("click", 90, 35)], after=after)
        ],
    )
    compile_bundle(rec, tmp_path / "b", "browse", OcrEngine())
    (step,) = yaml.safe_load((tmp_path / "b" / "flow.yaml").read_text())["steps"]
    shown = [e.get("text_present") for e in step["expect"]]
    assert "Lovelace" not in shown and "Filter" in shown
