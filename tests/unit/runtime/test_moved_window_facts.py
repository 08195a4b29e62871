"""A fact no target of its step places follows the moved window (issue 35, LibreOffice Calc "window moved"): a cell
clicked, Enter, then ctrl+s opens a dialog over the same window. ctrl+s has no target and neither has the step
before it, so its fact's area is recorded at screen pixels; with the window moved, the dialog's word is read where the
targets found so far in this run say the window now is. A small dialog word that a whole-frame read misses (as
Tesseract misses VCL's bold dialog text on a full screen) is simulated by an OCR engine that reads only areas.
On the in-package fake backend."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from openadapt_flow.backends.fake import FakeBackend
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.runtime.runs import replay
from openadapt_flow.runtime.start.launch import ReplayRequest
from openadapt_flow.vision.ocr import OcrEngine, TextMatch
from tests.support.screens import Canvas, crop, save_png
from tests.unit.runtime.test_engine import key_env  # noqa: F401 - a fixture

pytestmark = pytest.mark.timeout(120)

CELL = (40, 60, 120, 30)  # the cell clicked, in the recorded layout (window at 0,0)
DIALOG_WORD = (200, 200, 130, 24)  # where the recording read the dialog's word
MOVED = (120, 100)


class AreaOnlyOcr(OcrEngine):
    """Reads an area, never the whole frame: a small dialog word a whole-frame read misses."""

    def find(self, image: np.ndarray, text: str, box=None, min_score: float = 80.0) -> list[TextMatch]:
        if box is None or box[2] * box[3] > image.shape[0] * image.shape[1] // 4:
            return []
        return super().find(image, text, box, min_score)


def sheet(dx: int, dy: int, selected: bool = False, dialog: bool = False, entered: bool = False) -> np.ndarray:
    c = Canvas()
    c.draw.rectangle([dx, dy, dx + 420, dy + 300], fill=(235, 235, 235), outline=(60, 60, 60))
    x, y, w, h = CELL
    c.draw.rectangle([x + dx, y + dy, x + dx + w, y + dy + h], fill=(255, 255, 255), outline=(90, 90, 90))
    c.text(x + dx + 6, y + dy + 4, "Ada Lovelace", size=16)
    if selected:
        c.draw.rectangle([x + dx, y + dy, x + dx + w, y + dy + h], outline=(20, 20, 140), width=3)
    if entered:  # Enter moved the cell cursor one row down
        c.draw.rectangle([x + dx, y + dy + h, x + dx + w, y + dy + 2 * h], outline=(20, 20, 140), width=3)
    if dialog:
        c.draw.rectangle([dx + 180, dy + 180, dx + 400, dy + 280], fill=(200, 200, 200), outline=(0, 0, 0))
        c.text(dx + 200, dy + 200, "formatting", size=20)
    return c.array()


class Calc(FakeBackend):
    """The sheet at `at`: a click on the cell selects it, Enter moves down, ctrl+s opens the dialog."""

    def __init__(self, at: tuple[int, int]) -> None:
        self.at, self.selected, self.dialog, self.entered = at, False, False, False
        super().__init__(sheet(*at), self._react)

    def _react(self, fake: FakeBackend, ev: tuple) -> None:
        if ev[0] == "click":
            self.selected = True
        if ev[0] == "press" and tuple(ev[1]) == ("ctrl", "s"):
            self.dialog = True
        if ev[0] == "press" and tuple(ev[1]) == ("enter",):
            self.entered = True
        self.set_frame(sheet(*self.at, self.selected, self.dialog, self.entered))


def bundle(root, word_region=DIALOG_WORD):
    save_png(root / "templates/cell.png", crop(sheet(0, 0), CELL))
    steps = [
        {"id": "cell", "intent": "Click the cell", "action": "click",
         "target": {"template": "templates/cell.png", "region": list(CELL)}},
        {"id": "enter", "intent": "Press enter", "action": "key", "keys": ["enter"]},
        {"id": "save", "intent": "Press ctrl+s", "action": "hotkey", "keys": ["ctrl", "s"],
         "expect": [{"text_present": "formatting", "region": list(word_region)}]},
    ]  # fmt: skip
    flow = {
        "schema": "openadapt-flow/bundle@1",
        "name": "save",
        "screen": {"width": 640, "height": 480},
        "steps": steps,
    }
    root.mkdir(parents=True, exist_ok=True)
    (root / "flow.yaml").write_text(yaml.safe_dump(flow, sort_keys=False))
    return root


def run(tmp_path, root, backend):
    cfg = DeployConfig.model_validate(
        {"schema": "openadapt-flow/config@1", "runtime": {"runs_root": str(tmp_path / "runs"), "settle_quiet_s": 0.01}}
    )
    req = ReplayRequest(
        bundle=root,
        params={},
        backend=BackendSpec(kind="fake"),
        config=cfg,
        run_dir=tmp_path / "run",
        ocr=AreaOnlyOcr(),
    )
    return replay(req, backend_factory=lambda spec: backend)


def test_the_dialog_word_of_a_key_after_keys_is_read_where_the_moved_window_shows_it(tmp_path):
    out = run(tmp_path, bundle(tmp_path / "b"), Calc(MOVED))
    assert out.state == "COMPLETED", out.message


def test_where_the_window_did_not_move_it_is_read_where_recorded(tmp_path):
    out = run(tmp_path, bundle(tmp_path / "b"), Calc((0, 0)))
    assert out.state == "COMPLETED", out.message


def test_a_word_the_moved_window_does_not_show_there_still_halts(tmp_path):
    # the fact's area recorded somewhere the dialog's word is not: moved with the window it is still not there
    out = run(tmp_path, bundle(tmp_path / "b", word_region=(20, 250, 130, 24)), Calc(MOVED))
    assert out.state == "FAILED" and "formatting" in out.message, out.message
