"""Durable runs through the CLI as scripts use them: exit codes exactly as SPEC §6, over real VNC."""

from __future__ import annotations

import json

import pytest

from tests.e2e.demo_harness import BUNDLE_DIR
from tests.support.cli import flow_env, run_flow

pytestmark = pytest.mark.timeout(180)
PARAMS = ["--param", "vendor=ACME Corp", "--param", "amount=1250.50"]


def test_require_approval_script_loop_and_report(tmp_path, demo_app):
    app = demo_app("normal", refute_save=True)
    env = flow_env(tmp_path, DEMO_DB_DSN=f"sqlite:///{app.db_path}")
    run_dir = tmp_path / "run"
    r = run_flow(
        ["replay", str(BUNDLE_DIR), "--url", app.xvnc.url, "--durable", "--run-dir", str(run_dir), *PARAMS],
        tmp_path,
        env=env,
    )
    assert r.returncode == 3, r.stderr  # PAUSED: the app claimed success, the row never landed
    st = json.loads(run_flow(["status", str(run_dir), "--json"], tmp_path, env=env).stdout)
    assert (st["state"], st["transaction_outcome"]) == ("PAUSED", "HALTED_BEFORE_EFFECT")
    assert st["pending_decision"]["step"] == "save"
    # a script loop: resume --require-approval refuses (6) until an operator decides
    assert run_flow(["resume", str(run_dir), "--require-approval"], tmp_path, env=env).returncode == 6
    assert (
        run_flow(["approve", str(run_dir), "--decision", "skip", "--operator", "ops"], tmp_path, env=env).returncode
        == 6
    )
    assert (
        run_flow(
            ["approve", str(run_dir), "--decision", "reject", "--operator", "ops", "--note", "ledger down"],
            tmp_path,
            env=env,
        ).returncode
        == 0
    )
    assert run_flow(["resume", str(run_dir), "--require-approval"], tmp_path, env=env).returncode == 4  # BLOCKED
    assert (
        run_flow(["approve", str(run_dir), "--decision", "reject", "--operator", "ops"], tmp_path, env=env).returncode
        == 0
    )  # no-op
    assert (
        run_flow(["approve", str(run_dir), "--decision", "continue", "--operator", "ops"], tmp_path, env=env).returncode
        == 6
    )
    rep = json.loads((run_dir / "report.json").read_text())
    assert rep["state"] == "BLOCKED" and rep["incident"]["operator"] == "ops"
    assert rep["decisions"][0]["decision"] == "reject"
    md = (run_dir / "REPORT.md").read_text()
    assert "decision reject on " in md and "note: “ledger down”" in md and "incident" in md
    assert app.rows() == []


def test_bad_run_dirs_exit_2(tmp_path):
    (tmp_path / "notarun").mkdir()
    r = run_flow(["resume", str(tmp_path / "notarun")], tmp_path)
    assert r.returncode == 2 and "not a run directory" in r.stderr
    r = run_flow(["approve", str(tmp_path / "nope"), "--decision", "continue", "--operator", "x"], tmp_path)
    assert r.returncode == 2 and "not found" in r.stderr
