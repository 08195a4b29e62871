"""A typed table cell has no label beside it (its row is data): its target is anchored by its column's header, the
column its value landed in, read above the cell in its own column."""

from __future__ import annotations

import pytest
import yaml

from openadapt_flow.fixture.gestures import Gesture
from openadapt_flow.fixture.recorder import Batch, Recording
from openadapt_flow.record.compile import compile_bundle
from openadapt_flow.vision.ocr import OcrEngine
from tests.support.screens import Canvas

pytestmark = pytest.mark.timeout(60)


def grid(value: str = "") -> Canvas:
    c = Canvas().text(60, 60, "name").text(260, 60, "clinic")
    c.draw.rectangle([40, 150, 239, 189], fill=(255, 255, 255), outline=(150, 150, 150))
    c.draw.rectangle([240, 150, 399, 189], fill=(255, 255, 255), outline=(150, 150, 150))
    return c.text(50, 158, value, size=18) if value else c


def test_a_typed_cell_is_anchored_by_the_header_of_the_column_its_value_landed_in(tmp_path):
    empty, typed = grid().array(), grid("Grace").array()
    keys = [Gesture("key", key=ch, char=ch) for ch in "Grace"]
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=empty,
        sor_kind="sqlite",
        batches=[
            Batch(
                before=empty,
                lead=[Gesture("press", 140, 170, key="click"), Gesture("click", 140, 170)],
                edits=keys,
                mid=empty,
                after=typed,
            ),
            Batch(
                before=typed,
                lead=[Gesture("key", key="ctrl+s")],
                after=typed,
                writes=[("patients", {"id": 1, "name": "Grace", "clinic": None})],
            ),
        ],
    )
    compile_bundle(rec, tmp_path / "b", "cell", OcrEngine(), dsn_env="DB")
    cell = yaml.safe_load((tmp_path / "b" / "flow.yaml").read_text())["steps"][0]
    assert cell["action"] == "type"
    (lm,) = cell["target"]["landmarks"]
    assert lm["text"] == "name" and lm["dy"] < -60 and abs(lm["dx"]) < 100
    assert lm["column"] is True  # held along the row only: the table may have more rows at replay
