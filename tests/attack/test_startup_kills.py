"""A kill at every point of a run's start-up (SPEC §7, begin_run): either no run exists yet (nothing was sent, and
a fresh replay finishes) or the run is whole and reconcile + resume finish it. Never a run that can't be resumed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.demo_harness import BUNDLE_DIR
from tests.support.cli import flow_env, run_flow

pytestmark = pytest.mark.timeout(240)
PARAMS = ["--param", "vendor=ACME Corp", "--param", "amount=1250.50"]
BEFORE_THE_RUN = ["start:dir_created", "start:lease_acquired", "start:bundle_copied", "after:run_started", "start:state_written"]
RUN_IS_WHOLE = ["start:manifest_written"]


def _replay(tmp_path: Path, app, env: dict, run_dir: Path, **extra: str):
    return run_flow(["replay", str(BUNDLE_DIR), "--url", app.xvnc.url, "--durable", "--run-dir", str(run_dir), *PARAMS],
                    tmp_path, env=dict(env, **extra))


@pytest.mark.parametrize("point", BEFORE_THE_RUN + RUN_IS_WHOLE)
def test_a_kill_during_start_up_never_strands_a_run(tmp_path, demo_app, point):
    app = demo_app("normal")
    env = flow_env(tmp_path, DEMO_DB_DSN=f"sqlite:///{app.db_path}")
    runs = tmp_path / "runs"
    run_dir = runs / "run"
    r = _replay(tmp_path, app, env, run_dir, FLOW_CRASH_AT=point)
    assert r.returncode == -9, (r.returncode, r.stderr)
    assert app.rows() == []

    st = run_flow(["status", str(run_dir), "--json"], tmp_path, env=env)
    rc = run_flow(["reconcile", str(runs), "--json"], tmp_path, env=env)
    assert rc.returncode == 0, rc.stderr
    rows = {Path(x["run_dir"]).name: x for x in json.loads(rc.stdout)}
    if point in BEFORE_THE_RUN:  # no manifest yet: not a run; nothing was sent, so the job is simply replayed
        assert st.returncode == 2 and "not a run directory" in st.stdout + st.stderr
        if (run_dir / "journal.jsonl").exists():
            assert rows["run"]["action"] == "unstarted" and "no input was sent" in rows["run"]["reason"]
        res = run_flow(["resume", str(run_dir)], tmp_path, env=env)
        assert res.returncode == 2, res.stderr
        again = _replay(tmp_path, app, env, runs / "again")
        assert again.returncode == 0, again.stderr + again.stdout
    else:  # the run is whole: shown INTERRUPTED, finalised by reconcile, finished by resume from its first step
        assert st.returncode == 0 and json.loads(st.stdout)["state"] == "INTERRUPTED", st.stdout + st.stderr
        assert rows["run"]["action"] == "finalized" and rows["run"]["transaction_outcome"] == "HALTED_BEFORE_EFFECT"
        res = run_flow(["resume", str(run_dir), "--json"], tmp_path, env=env)
        assert res.returncode == 0, res.stderr + res.stdout
        assert json.loads(res.stdout)["state"] == "COMPLETED"
    assert [(v, a) for _, v, a, _ in app.rows()] == [("ACME Corp", 1250.5)]  # exactly one row
