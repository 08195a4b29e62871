"""A kill at every point of `flow resume` itself, after a kill that left the save step uncertain: reconcile + resume
again must still finish with exactly one row, the save never dispatched twice, verified progress never lost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.demo_harness import BUNDLE_DIR
from tests.support.cli import flow_env, run_flow

pytestmark = pytest.mark.timeout(240)
PARAMS = ["--param", "vendor=ACME Corp", "--param", "amount=1250.50"]
RESUME_POINTS = ["after:run_resumed", "after:rechecked@save", "after:step_verified@save", "checkpoint:renamed@save",
                 "after:step_started@back", "after:action_dispatched@back", "after:action_sent@back"]


def _journal(run_dir: Path) -> list[dict]:
    return [json.loads(l) for l in (run_dir / "journal.jsonl").read_text().splitlines() if l.strip()]


@pytest.mark.parametrize("point", RESUME_POINTS)
def test_a_kill_inside_resume_is_itself_resumable(tmp_path, demo_app, point):
    app = demo_app("normal")
    env = flow_env(tmp_path, DEMO_DB_DSN=f"sqlite:///{app.db_path}")
    runs = tmp_path / "runs"
    run_dir = runs / "run"
    r = run_flow(["replay", str(BUNDLE_DIR), "--url", app.xvnc.url, "--durable", "--run-dir", str(run_dir), *PARAMS],
                 tmp_path, env=dict(env, FLOW_CRASH_AT="after:action_sent@save"))
    assert r.returncode == -9, r.stderr
    assert run_flow(["reconcile", str(runs)], tmp_path, env=env).returncode == 0
    before = [x["step"] for x in _journal(run_dir) if x["type"] == "step_verified"]

    killed = run_flow(["resume", str(run_dir)], tmp_path, env=dict(env, FLOW_CRASH_AT=point))
    assert killed.returncode == -9, killed.stdout + killed.stderr
    assert run_flow(["reconcile", str(runs)], tmp_path, env=env).returncode == 0
    res = run_flow(["resume", str(run_dir), "--json"], tmp_path, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert json.loads(res.stdout)["state"] == "COMPLETED"
    assert [(v, a) for _, v, a, _ in app.rows()] == [("ACME Corp", 1250.5)]
    recs = _journal(run_dir)
    after = [x["step"] for x in recs if x["type"] == "step_verified"]
    assert after[: len(before)] == before and after.count("save") == 1 and after[-1] == "back"
    assert [x["step"] for x in recs if x["type"] == "action_dispatched"].count("save") == 1
