"""The field a secret was typed into is painted over in every frame written after it (fake backend, real Tesseract).

The fake app shows what is typed in the clear, as many real ones do (a vendor name, an account number).
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml

from openadapt_flow.backends.fake import FakeBackend
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.report.render import write_reports
from openadapt_flow.runtime.runs import replay
from openadapt_flow.runtime.start.context import secret_regions
from openadapt_flow.runtime.start.launch import ReplayRequest
from openadapt_flow.store import RunDir
from openadapt_flow.vision.mask import FILL, field_band
from openadapt_flow.vision.ocr import OcrEngine
from tests.support.screens import Canvas, crop, save_png
from tests.unit.runtime.test_durable import cfg, env  # noqa: F401 - env is a fixture
from tests.unit.runtime.test_engine import records

pytestmark = pytest.mark.timeout(120)

SECRET = "Zanzibar Quokka"
FIELD = (10, 90, 400, 46)  # the "Password" label and its field: the secret step's template crop
POST_BOX = (100, 300, 120, 40)


def screen(typed: str = "", posted: bool = False) -> np.ndarray:
    c = Canvas().text(20, 20, "Ledger").text(20, 100, "Password", size=20).button(140, 95, "", w=260, h=36)
    if typed:
        c.text(152, 101, typed, size=20)
    c.button(*POST_BOX[:2], "Post")
    if posted:
        c.text(100, 360, "Posted")
    return c.array()


class App:
    """Shows typed text in the field in the clear; Post shows 'Posted'."""

    def __init__(self) -> None:
        self.typed, self.posted = "", False
        self.backend = FakeBackend(screen(), self.on_event)

    def on_event(self, fake: FakeBackend, ev: tuple) -> None:
        if ev[0] == "type":
            self.typed += ev[1]  # typed in batches (runtime/start/fenced.py): each adds to the field
        elif ev[0] == "click" and ev[1:3] == (160, 320):
            self.posted = True
        else:
            return
        fake.set_frame(screen(self.typed, self.posted))


def bundle(root: Path, pw_target: bool = True) -> Path:
    first = screen()
    save_png(root / "templates/field.png", crop(first, FIELD))
    save_png(root / "templates/post.png", crop(first, POST_BOX))
    pw = {"id": "pw", "action": "type", "text": "{secret:pw}"}
    if pw_target:
        pw["target"] = {"template": "templates/field.png", "region": list(FIELD), "point": [200, 23]}
    steps = [
        pw,
        {
            "id": "post",
            "action": "click",
            "target": {"template": "templates/post.png", "region": list(POST_BOX)},
            "expect": [{"text_present": "Posted"}],
        },
        {"id": "gone", "action": "click", "target": {"text": "Nowhere to be found"}, "timeout_s": 1},
    ]
    flow = {
        "schema": "openadapt-flow/bundle@1",
        "name": "secret",
        "screen": {"width": 640, "height": 480},
        "params": {"pw": {"type": "string", "secret": True}},
        "steps": steps,
    }
    (root / "flow.yaml").write_text(yaml.safe_dump(flow, sort_keys=False))
    return root


def start(tmp_path: Path, app: App, pw_target: bool = True):
    req = ReplayRequest(
        bundle=bundle(tmp_path / "b", pw_target),
        params={},
        backend=BackendSpec(kind="fake"),
        config=cfg(tmp_path),
        run_dir=tmp_path / "run",
    )
    return replay(req, backend_factory=lambda spec: app.backend)


def read(ocr: OcrEngine, png: Path) -> str:
    return " ".join(w.text for w in ocr.read(cv2.cvtColor(cv2.imread(str(png)), cv2.COLOR_BGR2RGB)))


def assert_no_secret(run_dir: Path, ocr: OcrEngine) -> None:
    for p in sorted(run_dir.rglob("*.png")):
        text = read(ocr, p)
        assert "Zanzibar" not in text and "Quokka" not in text, f"{p.name}: {text!r}"
    for f in run_dir.rglob("*"):
        assert not f.is_file() or b"Zanzibar" not in f.read_bytes(), f


def test_the_field_a_secret_was_typed_into_is_masked_in_later_and_halt_frames(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOW_SECRET_PW", SECRET)
    app = App()
    out = start(tmp_path, app)
    assert (out.state, out.category) == ("PAUSED", "resolution"), out.message
    ocr = OcrEngine()
    assert SECRET in app.backend.typed and ocr.find(app.backend.frame, SECRET)  # the app shows it
    frames = out.run_dir / "frames"
    assert {p.name for p in frames.glob("*.png")} == {
        "001-post-before.png",
        "001-post-after.png",
        "halt-gone.png",
        "halt-gone-raw.png",
    }
    assert_no_secret(out.run_dir, ocr)
    assert "Ledger" in read(ocr, frames / "001-post-after.png") and "Posted" in read(ocr, frames / "001-post-after.png")

    masked = [r for r in records(out.run_dir) if r["type"] == "frames_masked"]
    assert [(r["step"], r["data"]["whole_frame"]) for r in masked] == [("pw", False)]
    x, y, w, h = masked[0]["data"]["box"]
    assert x <= 140 and y <= 95 and x + w >= 400 and y + h >= 131  # the whole field
    after = cv2.imread(str(frames / "001-post-after.png"))[..., ::-1]
    assert (after[110, 160] == FILL).all() and not (after[320, 160] == FILL).all()

    rep = write_reports(RunDir(out.run_dir))
    assert rep["masked"] == [{"step": "pw", "box": [x, y, w, h], "whole_frame": False, "from_seq": masked[0]["seq"]}]
    assert "Frames masked: step pw typed a secret" in (out.run_dir / "REPORT.md").read_text()
    assert_no_secret(out.run_dir, ocr)  # report.html embeds the frames: still nothing


def test_a_secret_typed_into_the_focused_field_masks_where_the_typing_showed(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOW_SECRET_PW", SECRET)
    out = start(tmp_path, App(), pw_target=False)
    assert (out.state, out.category) == ("PAUSED", "resolution"), out.message
    masked = [r["data"] for r in records(out.run_dir) if r["type"] == "frames_masked"]
    assert [m["whole_frame"] for m in masked] == [True, False]  # the whole frame until the typing showed where it went
    x, y, w, h = masked[-1]["box"]
    assert x <= 152 and y <= 101 and x + w >= 330 and y + h >= 120 and y > 40  # the typed text, not the title
    ocr = OcrEngine()
    assert_no_secret(out.run_dir, ocr)
    assert "Ledger" in read(ocr, out.run_dir / "frames/001-post-after.png")


def test_masks_are_re_derived_from_the_journal():
    def rec(seq, typ, step, **data):
        return {"seq": seq, "type": typ, "step": step, "data": data}

    hit = {"rung": "template", "verdict": "hit", "box": [10, 90, 400, 46]}
    journal = [
        rec(1, "resolved", "pw", role="target", ok=True, evidence=[hit]),
        rec(2, "action_dispatched", "pw", point=[210, 113]),  # killed before its frames_masked record
        rec(3, "action_dispatched", "user", point=[210, 50]),  # not a secret step
        rec(4, "action_dispatched", "pin", point=None),
        rec(5, "frames_masked", "pin", box=None, whole_frame=True),
        rec(6, "frames_masked", "pin", box=[100, 200, 50, 20], whole_frame=False),  # narrowed: the last one wins
        rec(7, "action_dispatched", "otp", point=None),
    ]
    got = secret_regions(journal, {"pw", "pin", "otp", "never"}, (1.0, 1.0))
    assert got == {"pw": field_band((210, 113), (10, 90, 400, 46)), "pin": (100, 200, 50, 20), "otp": None}


def test_a_child_run_masks_the_field_its_parent_typed_a_secret_into(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOW_SECRET_PW", SECRET)
    app = App()
    root = bundle(tmp_path / "b")
    flow = yaml.safe_load((root / "flow.yaml").read_text())
    first = screen()
    child = root / "child"
    save_png(child / "templates/post.png", crop(first, POST_BOX))
    child_steps = [
        {
            "id": "post",
            "action": "click",
            "target": {"template": "templates/post.png", "region": list(POST_BOX)},
            "expect": [{"text_present": "Posted"}],
        },
        {"id": "gone", "action": "click", "target": {"text": "Nowhere to be found"}, "timeout_s": 1},
    ]
    (child / "flow.yaml").write_text(
        yaml.safe_dump(
            {
                "schema": "openadapt-flow/bundle@1",
                "name": "child",
                "screen": {"width": 640, "height": 480},
                "steps": child_steps,
            },
            sort_keys=False,
        )
    )
    flow["steps"] = [flow["steps"][0], {"id": "sub", "action": "flow", "bundle": "child"}]
    (root / "flow.yaml").write_text(yaml.safe_dump(flow, sort_keys=False))
    req = ReplayRequest(
        bundle=root, params={}, backend=BackendSpec(kind="fake"), config=cfg(tmp_path), run_dir=tmp_path / "run"
    )
    out = replay(req, backend_factory=lambda spec: app.backend)
    assert (out.state, out.category) == ("PAUSED", "child"), out.message
    child_run = tmp_path / "run" / "children" / "sub"
    assert {p.name for p in (child_run / "frames").glob("*.png")} >= {"000-post-after.png", "halt-gone.png"}
    ocr = OcrEngine()
    assert ocr.find(app.backend.frame, SECRET)  # the screen the child saw showed it
    assert_no_secret(child_run, ocr)
    handed = [r for r in records(child_run) if r["type"] == "frames_masked"]
    assert [r["step"] for r in handed] == ["parent:pw"]
    # a resumed child masks too: its masks come back from its own journal
    from openadapt_flow.runtime.operate.approval import approve
    from openadapt_flow.runtime.runs import resume

    approve(child_run, "continue", "ops")
    later = App()  # a fresh connection to the same screen, the secret still shown
    later.typed, later.posted = SECRET, True
    later.backend.set_frame(screen(SECRET, True))
    again = resume(child_run, backend_factory=lambda spec: later.backend)
    assert again.state == "PAUSED"
    assert_no_secret(child_run, ocr)
