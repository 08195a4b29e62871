"""A typed secret never reaches the run directory, even when the application shows what was typed.

The demo app's vendor field shows its text in the clear. A bundle types a secret param there, goes on, and halts on a
later step whose target is missing; then an operator's `continue` resumes it and it halts there again. Every PNG
the run wrote (before/after frames of later steps, raw and annotated halt frames, from both processes) is read with the
project's OCR, and every file (report.html with its embedded frames included) is searched for the secret's value.

Filesystem only: it reads every file and PNG the run left on disk (frames, report.html) for the secret.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import cv2
import pytest
import yaml

from openadapt_flow.vision.ocr import OcrEngine, normalise
from tests.e2e.demo_harness import BUNDLE_DIR, capture
from tests.support.cli import flow_env, run_flow

pytestmark = pytest.mark.timeout(300)

SECRET = "Zanzibar Quokka"  # two words Tesseract reads easily: if a frame showed it, OCR would say so


def secret_bundle(root: Path) -> Path:
    """The demo bundle with `vendor` a secret typed into the vendor field, then a step whose target is not there."""
    shutil.copytree(BUNDLE_DIR, root)
    flow = yaml.safe_load((root / "flow.yaml").read_text())
    flow["params"]["vendor"] = {"type": "string", "secret": True}
    steps = {s["id"]: s for s in flow["steps"]}
    steps["vendor"]["text"] = "{secret:vendor}"
    missing = {"id": "approve-all", "intent": "Approve every invoice", "action": "click",
               "target": {"text": "Approve all invoices"}, "timeout_s": 2}
    flow["steps"] = [steps["open-form"], steps["vendor"], steps["amount"], missing]
    (root / "flow.yaml").write_text(yaml.safe_dump(flow, sort_keys=False))
    return root


def words_read(ocr: OcrEngine, png: Path) -> str:
    img = cv2.cvtColor(cv2.imread(str(png), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
    return " ".join(normalise(w.text) for w in ocr.read(img))


def assert_secret_nowhere(run_dir: Path, ocr: OcrEngine) -> list[Path]:
    pngs = sorted(run_dir.rglob("*.png"))
    for p in pngs:
        read = words_read(ocr, p)
        assert "zanzibar" not in read and "quokka" not in read, f"{p.relative_to(run_dir)} shows the secret: {read!r}"
        assert not ocr.find(cv2.cvtColor(cv2.imread(str(p)), cv2.COLOR_BGR2RGB), SECRET), p
    for f in run_dir.rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            assert SECRET.encode() not in data and b"Zanzibar" not in data, f
    return pngs


def test_a_secret_shown_by_the_app_is_masked_in_every_saved_frame_and_after_resume(tmp_path, demo_app):
    app = demo_app("normal")
    env = flow_env(tmp_path, DEMO_DB_DSN=f"sqlite:///{app.db_path}", FLOW_SECRET_VENDOR=SECRET,
                   FLOW_DECISION_KEY_FILE=str(tmp_path / "decision.key"))
    run_dir = tmp_path / "run"
    bundle = secret_bundle(tmp_path / "bundle")
    r = run_flow(["replay", str(bundle), "--url", app.xvnc.url, "--durable", "--run-dir", str(run_dir), "--param", "amount=12.5"],
                 tmp_path, env=env)
    assert r.returncode == 3, r.stdout + r.stderr  # paused at the missing target
    ocr = OcrEngine()
    # the app really shows the secret: without masking, the frames below would too
    live = cv2.cvtColor(capture(app.xvnc), cv2.COLOR_BGR2RGB)
    assert ocr.find(live, SECRET), "the demo app does not show the typed vendor; this test would prove nothing"

    frames = {p.name for p in (run_dir / "frames").glob("*.png")}
    assert {"002-amount-before.png", "002-amount-after.png", "halt-approve-all.png", "halt-approve-all-raw.png"} <= frames
    assert not [n for n in frames if "-vendor-" in n]  # the secret step itself saves no frames
    assert_secret_nowhere(run_dir, ocr)
    # ...and the field still shows in frames from before the secret was typed (masking is not blanket)
    assert "Vendor" in " ".join(w.text for w in ocr.read(cv2.imread(str(run_dir / "frames/000-open-form-after.png"))[..., ::-1].copy()))

    rep = json.loads((run_dir / "report.json").read_text())
    assert [m["step"] for m in rep["masked"]] == ["vendor"] and not rep["masked"][0]["whole_frame"]
    assert "Frames masked: step vendor typed a secret" in (run_dir / "REPORT.md").read_text()
    assert "Frames masked" in (run_dir / "report.html").read_text()

    # a resumed run is another process: it re-derives the masks from the journal and masks its halt frame too
    halt_png = run_dir / "frames/halt-approve-all.png"
    first_written = halt_png.stat().st_mtime_ns
    assert run_flow(["approve", str(run_dir), "--decision", "continue", "--operator", "ops"], tmp_path, env=env).returncode == 0
    r = run_flow(["resume", str(run_dir), "--url", app.xvnc.url], tmp_path, env=env)
    assert r.returncode == 3, r.stdout + r.stderr  # the target is still missing
    halts = [ln for ln in (run_dir / "journal.jsonl").read_text().splitlines() if '"type":"halted"' in ln]
    assert len(halts) == 2
    assert halt_png.stat().st_mtime_ns > first_written  # the resumed process wrote it again: the check below covers it
    assert_secret_nowhere(run_dir, ocr)
    assert ocr.find(cv2.cvtColor(capture(app.xvnc), cv2.COLOR_BGR2RGB), SECRET)  # still on the live screen
