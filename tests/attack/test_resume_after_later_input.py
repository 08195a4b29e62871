"""A kill after a later step's input landed (or was about to): resume re-checks that step first and re-proves the
checkpoint's screen facts only where the screen can still show them. The run must finish with exactly one row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.demo_harness import BUNDLE_DIR
from tests.support.cli import flow_env, run_flow

pytestmark = pytest.mark.timeout(240)
PARAMS = ["--param", "vendor=ACME Corp", "--param", "amount=1250.50"]


def _journal(run_dir: Path) -> list[dict]:
    return [json.loads(l) for l in (run_dir / "journal.jsonl").read_text().splitlines() if l.strip()]


@pytest.mark.parametrize("point", ["after:action_sent@back", "after:action_dispatched@back"])
def test_kill_after_the_step_after_the_checkpoint_still_finishes(tmp_path, demo_app, point):
    app = demo_app("normal")
    env = flow_env(tmp_path, DEMO_DB_DSN=f"sqlite:///{app.db_path}")
    run_dir = tmp_path / "run"
    r = run_flow(["replay", str(BUNDLE_DIR), "--url", app.xvnc.url, "--durable", "--run-dir", str(run_dir), *PARAMS],
                 tmp_path, env=dict(env, FLOW_CRASH_AT=point))
    assert r.returncode == -9, (r.returncode, r.stderr)
    assert [x["step"] for x in _journal(run_dir) if x["type"] == "step_verified"][-1] == "save"
    assert len(app.rows()) == 1

    rc = run_flow(["reconcile", str(tmp_path), "--json"], tmp_path, env=env)
    assert rc.returncode == 0, rc.stderr
    res = run_flow(["resume", str(run_dir), "--json"], tmp_path, env=env)
    assert res.returncode == 0, res.stderr + res.stdout
    assert json.loads(res.stdout)["state"] == "COMPLETED"
    assert [(v, a) for _, v, a, _ in app.rows()] == [("ACME Corp", 1250.5)]
    recs = _journal(run_dir)
    rechecked = [x for x in recs if x["type"] == "rechecked"]
    assert [x["step"] for x in rechecked] == ["back"]
    reproved = [x for x in recs if x["type"] == "checkpoint_reproved"]
    if point == "after:action_sent@back":  # the click landed: `back`'s own facts stand in for "Saved"
        assert rechecked[0]["data"]["verdict"] == "CONFIRMED" and reproved == []
        assert [x["step"] for x in recs if x["type"] == "action_dispatched"].count("back") == 1
    else:  # nothing reached the app: the checkpoint's facts still show, and `back` is performed again
        assert rechecked[0]["data"]["verdict"] == "RETRYABLE" and reproved and reproved[0]["data"]["ok"]
    assert [x["step"] for x in recs if x["type"] == "step_verified"].count("save") == 1
