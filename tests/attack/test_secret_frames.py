"""A typed secret never reaches the run's records or artifacts, even when the application shows what was typed.

The demo app's vendor field shows its text in the clear. A bundle types a secret param there, goes on, and halts on a
later step whose target is missing; then an operator's `continue` resumes it and it halts there again. Every PNG
the run stored (before/after frames of later steps, raw and annotated halt frames, from both commands) is read with the
project's OCR, and every artifact (report.html with its embedded frames included) and record is searched for the
secret's value — read through the store interface (`RunHandle`), so on every store: the filesystem (`flow`
processes; every file on disk is searched too), memory (the commands run in this process, on the same real app) and
PostgreSQL (`flow` processes naming a schema of the session's server).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
import yaml

from openadapt_flow.runtime.start.runref import open_ref
from openadapt_flow.store.base import RunHandle
from openadapt_flow.vision.ocr import OcrEngine, normalise
from tests.attack.attack_support import STORES, forked_flow, pg_store
from tests.e2e.demo_harness import BUNDLE_DIR, capture
from tests.support import memcrash
from tests.support.cli import flow_env, run_flow

pytestmark = pytest.mark.timeout(300)

SECRET = "Zanzibar Quokka"  # two words Tesseract reads easily: if a frame showed it, OCR would say so
ARTIFACT_DIRS = ("frames", "bundle", "patches", "upgrades")
REPORTS = ("REPORT.md", "report.html")


def secret_bundle(root: Path) -> Path:
    """The demo bundle with `vendor` a secret typed into the vendor field, then a step whose target is not there."""
    shutil.copytree(BUNDLE_DIR, root)
    flow = yaml.safe_load((root / "flow.yaml").read_text())
    flow["params"]["vendor"] = {"type": "string", "secret": True}
    steps = {s["id"]: s for s in flow["steps"]}
    steps["vendor"]["text"] = "{secret:vendor}"
    missing = {
        "id": "approve-all",
        "intent": "Approve every invoice",
        "action": "click",
        "target": {"text": "Approve all invoices"},
        "timeout_s": 2,
    }
    flow["steps"] = [steps["open-form"], steps["vendor"], steps["amount"], missing]
    (root / "flow.yaml").write_text(yaml.safe_dump(flow, sort_keys=False))
    return root


class Commands:
    """`flow` on one store: (the run's reference, a command runner)."""

    def __init__(self, store: str, tmp_path: Path, env: dict[str, str], spec: str = "") -> None:
        self.store, self.env, self.spec, self.tmp_path = store, env, spec, tmp_path
        self.run = {"filesystem": str(tmp_path / "run"), "memory": f"memory:{tmp_path.name}-run", "postgres": "pg:run"}[
            store
        ]

    def flow(self, args: list[str]) -> Any:
        if self.store == "memory":
            return memcrash.flow(
                [*args, "--store", "memory:"] if args[0] == "replay" else args, self.tmp_path, self.env
            )
        if self.store == "postgres":
            return forked_flow([*args, "--store", self.spec], self.tmp_path, self.env)
        return run_flow(args, self.tmp_path, env=self.env)

    def handle(self) -> RunHandle:
        return open_ref(self.run)


@pytest.fixture(params=STORES)
def commands(request, tmp_path, monkeypatch, demo_app) -> Iterator[tuple[Commands, Any]]:
    app = demo_app("normal")
    env = flow_env(
        tmp_path,
        DEMO_DB_DSN=f"sqlite:///{app.db_path}",
        FLOW_SECRET_VENDOR=SECRET,
        FLOW_DECISION_KEY_FILE=str(tmp_path / "decision.key"),
    )
    spec = ""
    if request.param == "postgres":
        spec, env["PGPASSWORD"] = pg_store(request, monkeypatch)
    yield Commands(request.param, tmp_path, env, spec), app


def stored(run: RunHandle) -> Iterator[tuple[str, bytes]]:
    """Every artifact and record of the run as (name, bytes), read through the store interface."""
    for prefix in ARTIFACT_DIRS:
        for name in run.list_artifacts(prefix):
            yield name, run.get_artifact(name) or b""
    for name in REPORTS:
        yield name, run.get_artifact(name) or b""
    docs = {
        "manifest": run.manifest(),
        "state": run.state(),
        "checkpoint": run.read_checkpoint(),
        "pending": run.read_pending(),
        "approval": run.read_approval(),
        "incident": run.read_incident(),
        "decisions": run.decisions(),
    }
    for name, doc in docs.items():
        yield name, json.dumps(doc, ensure_ascii=False).encode()
    yield "journal", json.dumps(run.read_records(), ensure_ascii=False).encode()


def assert_secret_nowhere(run: RunHandle, ocr: OcrEngine, on_disk: Path | None) -> list[str]:
    pngs = []
    for name, data in stored(run):
        assert SECRET.encode() not in data and b"Zanzibar" not in data, name
        if name.endswith(".png"):
            img = cv2.cvtColor(cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
            read = " ".join(normalise(w.text) for w in ocr.read(img))
            assert "zanzibar" not in read and "quokka" not in read, f"{name} shows the secret: {read!r}"
            assert not ocr.find(img, SECRET), name
            pngs.append(name)
    assert {"frames/halt-approve-all.png", "frames/002-amount-after.png"} <= set(pngs), pngs  # the scan saw the frames
    if on_disk is not None:  # a run directory: every file in it, not only what the store names
        for f in on_disk.rglob("*"):
            if f.is_file():
                data = f.read_bytes()
                assert SECRET.encode() not in data and b"Zanzibar" not in data, f
    return pngs


def test_a_secret_shown_by_the_app_is_masked_in_every_saved_frame_and_after_resume(tmp_path, commands):
    cmd, app = commands
    run_dir = Path(cmd.run)
    on_disk = run_dir if cmd.store == "filesystem" else None
    bundle = secret_bundle(tmp_path / "bundle")
    r = cmd.flow(
        ["replay", str(bundle), "--url", app.xvnc.url, "--durable", "--run-dir", str(run_dir), "--param", "amount=12.5"]
    )
    assert r.returncode == 3, r.stdout + r.stderr  # paused at the missing target
    ocr = OcrEngine()
    # the app really shows the secret: without masking, the frames below would too
    live = cv2.cvtColor(capture(app.xvnc), cv2.COLOR_BGR2RGB)
    assert ocr.find(live, SECRET), "the demo app does not show the typed vendor; this test would prove nothing"

    run = cmd.handle()
    frames = run.frame_names()
    assert {
        "002-amount-before.png",
        "002-amount-after.png",
        "halt-approve-all.png",
        "halt-approve-all-raw.png",
    } <= frames
    assert not [n for n in frames if "-vendor-" in n]  # the secret step itself saves no frames
    assert_secret_nowhere(run, ocr, on_disk)
    # ...and the field still shows in frames from before the secret was typed (masking is not blanket)
    first = cv2.imdecode(
        np.frombuffer(run.get_artifact("frames/000-open-form-after.png") or b"", np.uint8), cv2.IMREAD_COLOR
    )
    assert "Vendor" in " ".join(w.text for w in ocr.read(first[..., ::-1].copy()))

    masked = [x for x in run.read_records() if x["type"] == "frames_masked"]  # what the report's masked list shows
    assert [m["step"] for m in masked] == ["vendor"] and not masked[0]["data"]["whole_frame"]
    if on_disk is not None:
        rep = json.loads((run_dir / "report.json").read_text())
        assert [m["step"] for m in rep["masked"]] == ["vendor"] and not rep["masked"][0]["whole_frame"]
    assert "Frames masked: step vendor typed a secret" in (run.get_artifact("REPORT.md") or b"").decode()
    assert "Frames masked" in (run.get_artifact("report.html") or b"").decode()

    # a resumed run is another process: it re-derives the masks from the journal and masks its halt frame too
    halt_before = run.get_artifact("frames/halt-approve-all.png")
    first_written = (run_dir / "frames/halt-approve-all.png").stat().st_mtime_ns if on_disk is not None else 0
    assert cmd.flow(["approve", str(run_dir), "--decision", "continue", "--operator", "ops"]).returncode == 0
    r = cmd.flow(["resume", str(run_dir), "--url", app.xvnc.url])
    assert r.returncode == 3, r.stdout + r.stderr  # the target is still missing
    run = cmd.handle()
    halts = [x for x in run.read_records() if x["type"] == "halted"]
    assert len(halts) == 2
    if on_disk is not None:  # the resumed process wrote it again: the check below covers it
        assert (run_dir / "frames/halt-approve-all.png").stat().st_mtime_ns > first_written
    else:
        assert run.get_artifact("frames/halt-approve-all.png") is not None and halt_before is not None
    assert_secret_nowhere(run, ocr, on_disk)
    assert ocr.find(cv2.cvtColor(capture(app.xvnc), cv2.COLOR_BGR2RGB), SECRET)  # still on the live screen
