"""SPEC §5/§8/§10 crash matrix: SIGKILL (and SIGTERM) the replay at every journal point of the consequential save step,
then `flow reconcile` + `flow resume` (+ `flow approve` where required). The system of record must end with exactly
one copy of the write, the recorded transaction_outcome must be the one §8 prescribes, and verified progress is never lost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.demo_harness import BUNDLE_DIR
from tests.support.cli import flow_env, run_flow

pytestmark = pytest.mark.timeout(240)
PARAMS = ["--param", "vendor=ACME Corp", "--param", "amount=1250.50"]

# point -> (transaction_outcome after the crash, needs an operator's approval on resume)
MATRIX = {
    "after:effect_baseline@save": ("HALTED_BEFORE_EFFECT", False),  # before dispatch
    "after:action_dispatched@save": ("RECONCILIATION_REQUIRED", True),  # after dispatch, before input
    "after:action_sent@save": ("RECONCILIATION_REQUIRED", False),  # after input, before verify (re-read confirms)
    "after:step_verified@save": ("HALTED_BEFORE_EFFECT", False),  # after verify, before checkpoint
    "checkpoint:tmp_written@save": ("HALTED_BEFORE_EFFECT", False),  # during the checkpoint write
    "checkpoint:renamed@save": ("HALTED_BEFORE_EFFECT", False),  # after the checkpoint
}


def journal(run_dir: Path) -> list[dict]:
    return [json.loads(l) for l in (run_dir / "journal.jsonl").read_text().splitlines() if l.strip()]


def verified_steps(run_dir: Path) -> list[str]:
    return [r["step"] for r in journal(run_dir) if r["type"] == "step_verified"]


def crash_then_recover(tmp_path: Path, app, point: str, signal: str = "KILL"):
    env = flow_env(tmp_path, DEMO_DB_DSN=f"sqlite:///{app.db_path}")
    run_dir = tmp_path / "run"
    crash_env = dict(env, FLOW_CRASH_AT=point, FLOW_CRASH_SIGNAL=signal)
    r = run_flow(["replay", str(BUNDLE_DIR), "--url", app.xvnc.url, "--durable", "--run-dir", str(run_dir), *PARAMS], tmp_path, env=crash_env)
    return env, run_dir, r


@pytest.mark.parametrize("point", list(MATRIX), ids=list(MATRIX))
def test_sigkill_at_every_journal_point(tmp_path, demo_app, point):
    app = demo_app("normal")
    env, run_dir, r = crash_then_recover(tmp_path, app, point)
    assert r.returncode == -9, (r.returncode, r.stderr)
    before = verified_steps(run_dir)
    assert before[:3] == ["open-form", "vendor", "amount"]

    st = run_flow(["status", str(run_dir), "--json"], tmp_path, env=env)
    assert st.returncode == 0 and json.loads(st.stdout)["state"] == "INTERRUPTED"  # shown, not written
    assert json.loads((run_dir / "state.json").read_text())["state"] == "RUNNING"

    rc = run_flow(["reconcile", str(tmp_path), "--json"], tmp_path, env=env)
    assert rc.returncode == 0, rc.stderr
    state = json.loads((run_dir / "state.json").read_text())
    outcome, needs_approval = MATRIX[point]
    assert (state["state"], state["transaction_outcome"]) == ("INTERRUPTED", outcome)

    res = run_flow(["resume", str(run_dir), "--json"], tmp_path, env=env)
    if needs_approval:
        assert res.returncode == 6, res.stderr + res.stdout
        assert app.rows() == []  # nothing was sent: the uncertain save was not retried blindly
        state = json.loads((run_dir / "state.json").read_text())
        assert (state["state"], state["paused_reason"]) == ("PAUSED", "awaiting_approval")
        ap = run_flow(["approve", str(run_dir), "--decision", "continue", "--operator", "ops"], tmp_path, env=env)
        assert ap.returncode == 0, ap.stderr
        res = run_flow(["resume", str(run_dir), "--json"], tmp_path, env=env)
    assert res.returncode == 0, res.stderr + res.stdout
    assert json.loads(res.stdout)["state"] == "COMPLETED"
    assert [(v, a) for _, v, a, _ in app.rows()] == [("ACME Corp", 1250.5)]  # exactly one copy
    after = verified_steps(run_dir)
    assert after[: len(before)] == before  # verified progress never lost
    assert after.count("open-form") == 1 and after.count("save") == 1 and after[-1] == "back"
    dispatched = [r["step"] for r in journal(run_dir) if r["type"] == "action_dispatched"]
    assert dispatched.count("open-form") == 1 and dispatched.count("vendor") == 1  # checkpointed steps never re-performed
    cp = json.loads((run_dir / "checkpoint.json").read_text())
    assert cp["step"] == "back" and cp["next_index"] == 5
    # a finished run resumed again does nothing and exits with its state's code
    again = run_flow(["resume", str(run_dir)], tmp_path, env=env)
    assert again.returncode == 0 and len(app.rows()) == 1


def test_sigterm_stops_at_a_safe_boundary_and_resumes(tmp_path, demo_app):
    app = demo_app("normal")
    env, run_dir, r = crash_then_recover(tmp_path, app, "after:action_sent@save", signal="TERM")
    assert r.returncode == 5, r.stderr + r.stdout
    state = json.loads((run_dir / "state.json").read_text())
    # SIGTERM arrived between input and verification: the step was verified first (the next safe boundary)
    assert (state["state"], state["transaction_outcome"]) == ("INTERRUPTED", "HALTED_BEFORE_EFFECT")
    assert verified_steps(run_dir)[-1] == "save"
    res = run_flow(["resume", str(run_dir), "--json"], tmp_path, env=env)
    assert res.returncode == 0, res.stderr + res.stdout
    assert len(app.rows()) == 1
    assert verified_steps(run_dir).count("save") == 1
