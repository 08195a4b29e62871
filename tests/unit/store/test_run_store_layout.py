"""The filesystem store writes the SPEC §7 run directory unchanged: the same file names, JSON layout and journal lines
that runs written before the run-store interface have (so they still resume)."""

from __future__ import annotations

import json
from datetime import datetime

import numpy as np
import pytest

from openadapt_flow.records.checkpoint import checkpoint_from_records
from openadapt_flow.store import FilesystemStore, MemoryStore

# the layout is pinned with small hand-made documents (an incident with two fields), not the runtime's records
pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.invalid_run_records("store tests write partial documents on purpose"),
]

KEY = b"k" * 64


def test_every_record_lands_in_its_section_7_file(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOW_STATE_DIR", str(tmp_path / "state"))
    run = FilesystemStore(tmp_path / "runs").create_run(now=datetime(2026, 1, 2, 3, 4, 5))
    run.write_manifest({"run_id": "run-1"})
    j = run.new_journal(KEY)
    j.append("step_started", "a", {"index": 0})
    j.append("step_verified", "a", {"index": 0})
    run.write_checkpoint(checkpoint_from_records(run.load_journal(KEY).records))
    run.write_state("PAUSED", journal=j, paused_reason="awaiting_approval")
    lease = run.lease(30).acquire()
    lease.release()
    run.write_pending({"pause_id": "pause-1"})
    run.write_approval({"pause_id": "pause-1"}, "sig")
    run.consume_approval("pause-1")
    run.write_incident({"id": "incident-1"})
    run.write_reports({"run_id": "run-1"}, "md", "html")
    run.put_artifact("bundle/flow.yaml", b"x")
    frames = run.frame_writer()
    frames.save_now("halt-a.png", np.zeros((2, 2, 3), np.uint8))
    frames.close()
    files = sorted(p.relative_to(run.path).as_posix() for p in run.path.rglob("*") if p.is_file())
    assert files == [
        ".approval.lock",
        ".lock",
        "REPORT.md",
        "bundle/flow.yaml",
        "checkpoint.json",
        "decisions/pause-1.json",
        "frames/halt-a.png",
        "incident.json",
        "journal.jsonl",
        "lease.json",
        "manifest.json",
        "pending_escalation.json",
        "report.html",
        "report.json",
        "state.json",
    ]
    assert run.path.name == "replay-20260102-030405"
    state_text = (run.path / "state.json").read_text()
    assert state_text.startswith(
        '{\n  "schema": "openadapt-flow/state@1",\n  "state": "PAUSED",'
    )  # indent 2, schema first
    line = (run.path / "journal.jsonl").read_bytes().split(b"\n")[0]
    assert list(json.loads(line)) == ["seq", "ts", "type", "step", "data", "prev_hash", "hash"] and b", " not in line


def test_both_stores_write_the_same_journal_lines(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOW_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr("openadapt_flow.store.journal.now_iso", lambda: "2026-01-02T03:04:05.000Z")
    fs, mem = FilesystemStore(tmp_path / "runs").create_run(), MemoryStore().create_run()
    for run in (fs, mem):
        j = run.new_journal(KEY)
        j.append("run_started", None, {"é": 1})
        j.append("note", "s")
    assert fs.journal_path.read_bytes() == bytes(mem.recs.journal) and len(fs.load_journal(KEY).records) == 2
