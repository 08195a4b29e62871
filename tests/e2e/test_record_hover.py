"""`flow record` on the demo app's `hover` variant (buttons light up under the pointer, a status bar shows a tip for
each), driven like a person in a viewer: the pointer glides to each target and rests there before pressing. The
bundle must not carry the hovered look in a template nor a status tip in a fact, and must replay with other values."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import yaml
from PIL import Image

from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.backends.vnc import VncBackend
from openadapt_flow.demo.app import HOVER_BG, TIPS
from openadapt_flow.runtime.act.settle import settle
from tests.support.cli import flow_env, load_script, record_via_proxy, run_flow

pytestmark = pytest.mark.timeout(300)
HOVER_RGB = tuple(int(HOVER_BG[i : i + 2], 16) for i in (1, 3, 5))


def glide(viewer: VncBackend, start: tuple[int, int], end: tuple[int, int], steps: int = 8) -> None:
    """Move the pointer from start to end in small steps, as a hand does, then let the screen settle (hover drawn)."""
    for i in range(1, steps + 1):
        x = round(start[0] + (end[0] - start[0]) * i / steps)
        y = round(start[1] + (end[1] - start[1]) * i / steps)
        viewer._send([("ptr", x, y, 0)], "move")
    settle(viewer, 0.35, 10)


def drive(port: int) -> None:
    script = load_script("record_demo_fixture")
    viewer = VncBackend(BackendSpec(kind="vnc", host="127.0.0.1", port=port, io_timeout_s=15))
    try:
        settle(viewer, 0.2, 5)
        at = (700, 400)
        viewer._send([("ptr", *at, 0)], "move")
        for _, action, x, y, text in script.STEPS[:5]:
            glide(viewer, at, (x, y))
            script.perform(viewer, action, x, y, text)
            settle(viewer, 0.35, 10, expect_change_s=2.0)
            at = (x, y)
        glide(viewer, at, (700, 400))  # and away, as a person leaves the last button
    finally:
        viewer.close()


def hovered_pixels(image: np.ndarray) -> int:
    return int(np.all(image[:, :, :3] == HOVER_RGB, axis=2).sum())


def test_a_recording_made_with_a_hovering_pointer_has_no_hover_in_templates_or_facts(tmp_path, demo_app):
    app = demo_app("hover")
    bundle, rec = tmp_path / "bundle", tmp_path / "rec"
    r = record_via_proxy(
        [
            "--url",
            app.xvnc.url,
            "--out",
            str(bundle),
            "--recording",
            str(rec),
            "--watch-sqlite",
            str(app.db_path),
            "--dsn-env",
            "DEMO_DB_DSN",
            "--name",
            "invoice-hover",
            "--json",
        ],
        tmp_path,
        drive,
    )
    assert r.returncode == 0, r.stderr
    doc = yaml.safe_load((bundle / "flow.yaml").read_text())
    assert [s["action"] for s in doc["steps"]] == ["click", "type", "type", "click", "click"]

    for png in sorted((bundle / "templates").iterdir()):
        assert hovered_pixels(np.array(Image.open(png).convert("RGB"))) == 0, f"{png.name} is cut in the hovered look"
    on_screens = {"invoice", "form", "the", "new", "save", "back"}  # tip words the app also shows without hover
    tip_words = {w.casefold() for tip in TIPS.values() for w in tip.split() if len(w) >= 3} - on_screens
    assert "permanently" in tip_words and "overview" in tip_words
    facts = json.dumps([s.get("expect", []) for s in doc["steps"]]).casefold()
    assert not {w for w in tip_words if re.search(rf"\b{w}\b", facts)}, facts

    # The proxy saw the hover (the press-time frames show it) and chose frames without it.
    recording = json.loads((rec / "recording.json").read_text())
    pressed = [np.array(Image.open(rec / b["pressed"])) for b in recording["batches"]]
    assert sum(hovered_pixels(f) > 0 for f in pressed) >= 3  # New invoice, Save, Back were pressed lit
    for b in recording["batches"]:
        assert hovered_pixels(np.array(Image.open(rec / b["before"]))) == 0
        assert hovered_pixels(np.array(Image.open(rec / b["after"]))) == 0  # before the pointer went on to the next

    env = flow_env(tmp_path, DEMO_DB_DSN=f"sqlite:///{app.db_path}")
    before = len(app.rows())
    r = run_flow(
        [
            "replay",
            str(bundle),
            "--url",
            app.xvnc.url,
            "--run-dir",
            str(tmp_path / "run"),
            "--json",
            "--param",
            "vendor=Globex Ltd",
            "--param",
            "amount=99.5",
        ],
        tmp_path,
        env=env,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    rows = app.rows()
    assert len(rows) == before + 1 and rows[-1][1:3] == ("Globex Ltd", 99.5)


def test_a_pointer_left_on_the_first_target_does_not_change_what_the_replay_resolves(tmp_path, demo_app):
    """Issue 33, item 5: the previous run (or a person) left the pointer on New invoice, which shows its hovered look
    and a status tip. The replay parks the pointer first (journaled, before the first frame it resolves on), and
    New invoice is found by its template as recorded, not by its words."""
    from tests.e2e.demo_harness import BUNDLE_DIR

    app = demo_app("hover")
    viewer = VncBackend(BackendSpec(kind="vnc", host="127.0.0.1", port=app.xvnc.port, io_timeout_s=15))
    try:
        settle(viewer, 0.2, 5)
        glide(viewer, (700, 400), (130, 112))  # onto New invoice, and left there
        assert hovered_pixels(viewer.capture().pixels) > 0
    finally:
        viewer.close()
    env = flow_env(tmp_path, INVOICES_DSN=f"sqlite:///{app.db_path}", DEMO_DB_DSN=f"sqlite:///{app.db_path}")
    r = run_flow(
        [
            "replay",
            str(BUNDLE_DIR),
            "--url",
            app.xvnc.url,
            "--run-dir",
            str(tmp_path / "run"),
            "--json",
            "--param",
            "vendor=Initech",
            "--param",
            "amount=12.5",
        ],
        tmp_path,
        env=env,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    recs = [json.loads(line) for line in (tmp_path / "run" / "journal.jsonl").read_text().splitlines()]
    kinds = [rec["type"] for rec in recs]
    assert kinds.count("pointer_parked") == 1 and kinds.index("pointer_parked") < kinds.index("resolved")
    first = next(rec for rec in recs if rec["type"] == "resolved")
    assert first["step"] == "open-form" and first["data"]["rung"] == "template", first["data"]["evidence"]
    assert app.rows()[-1][1:3] == ("Initech", 12.5)
