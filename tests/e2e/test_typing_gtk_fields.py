"""A `type` step replaces the content of GTK spin buttons (mousepad's Go to Line dialog) and types into GTK's
text view, on the real app over real RFB, judged by the saved file: F2, which opens a table cell's editor, must
be harmless in GTK fields, and End, Shift+Home must still select a spin button's whole value."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml

from openadapt_flow.demo.thirdparty import RunningApp, start_app
from openadapt_flow.vision.ocr import OcrEngine, find_text
from tests.support.cli import flow_env, run_flow

pytestmark = pytest.mark.timeout(240)
LINES = "".join(f"line {i} apple\n" for i in range(1, 21))


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    path = tmp_path / "notes.txt"
    path.write_text(LINES)
    return path


@pytest.fixture
def editor(notes: Path) -> Iterator[RunningApp]:
    app = start_app("mousepad", [str(notes)])
    try:
        yield app
    finally:
        app.stop()


def text_box(frame: np.ndarray, text: str) -> tuple[int, int, int, int]:
    matches = [m for m in find_text(OcrEngine().read(frame), text) if m.score >= 90]
    assert len(matches) == 1, f"{text!r} found {len(matches)} times"
    return tuple(int(v) for v in matches[0].box)  # type: ignore[return-value]


def cut(root: Path, frame: np.ndarray, name: str, region: list[int]) -> str:
    x, y, w, h = region
    cv2.imwrite(str(root / "templates" / f"{name}.png"), cv2.cvtColor(frame[y : y + h, x : x + w], cv2.COLOR_RGB2BGR))
    return f"templates/{name}.png"


def field_beside(root: Path, frame: np.ndarray, name: str, label: str) -> dict:
    """A spin button found with its label: the crop holds both, the click lands 50 px right of the label's end."""
    x, y, w, h = text_box(frame, label)
    region = [x - 4, y - 10, w + 100, h + 20]
    return {"template": cut(root, frame, name, region), "region": region, "point": [w + 54, h // 2 + 10]}


def write_bundle(root: Path, dialog: np.ndarray, path: Path) -> Path:
    (root / "templates").mkdir(parents=True)
    jx, jy, jw, jh = text_box(dialog, "Jump to")
    jump = [jx - 10, jy - 8, jw + 20, jh + 16]
    # Values typed as secrets only so that no OCR readback of two digits decides the outcome: the saved file does.
    steps = [
        {
            "id": "go-to-line",
            "intent": "Open Go to Line",
            "action": "hotkey",
            "keys": ["ctrl", "l"],
            "expect": [{"text_present": "Column number"}],
        },
        {
            "id": "line",
            "intent": "Type the line number",
            "action": "type",
            "text": "{secret:line}",
            "target": field_beside(root, dialog, "line", "Line number:"),
        },
        {
            "id": "column",
            "intent": "Type the column number",
            "action": "type",
            "text": "{secret:column}",
            "target": field_beside(root, dialog, "column", "Column number:"),
        },
        {
            "id": "jump",
            "intent": "Jump there",
            "action": "click",
            "target": {"template": cut(root, dialog, "jump", jump), "region": jump},
            "expect": [{"text_absent": "Column number"}],
        },
        {"id": "mark", "intent": "Type the mark at the caret", "action": "type", "text": "X", "append": True},
        {
            "id": "save",
            "intent": "Save the file",
            "action": "hotkey",
            "keys": ["ctrl", "s"],
            "consequential": True,
            "effect": {"kind": "file", "path": str(path), "contains": "line 12 apXple", "expect": {"equals": 1}},
        },
    ]
    doc = {
        "schema": "openadapt-flow/bundle@1",
        "name": "mark-line",
        "screen": {"width": dialog.shape[1], "height": dialog.shape[0]},
        "params": {"line": {"type": "string", "secret": True}, "column": {"type": "string", "secret": True}},
        "steps": steps,
    }
    (root / "flow.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return root


def test_typing_replaces_the_value_of_gtk_spin_buttons(tmp_path, editor, notes):
    import subprocess

    # the author's view of the dialog, to cut the templates from; closed again before the replay opens it
    subprocess.run(["xdotool", "key", "ctrl+l"], env=editor.env, check=True, timeout=10)
    dialog = editor.settle()
    subprocess.run(["xdotool", "key", "Escape"], env=editor.env, check=True, timeout=10)
    editor.settle()
    bundle = write_bundle(tmp_path / "bundle", dialog, notes)
    run_dir = tmp_path / "run"
    args = ["replay", str(bundle), "--url", editor.url, "--run-dir", str(run_dir), "--json"]
    r = run_flow(args, tmp_path, env=flow_env(tmp_path, FLOW_SECRET_LINE="12", FLOW_SECRET_COLUMN="10"), timeout=180)
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)["state"] == "COMPLETED"
    # the line field held "1" and the column field "0": "12" and "10" replaced them, so the mark is at line 12, col 10
    assert notes.read_text() == LINES.replace("line 12 apple", "line 12 apXple")
