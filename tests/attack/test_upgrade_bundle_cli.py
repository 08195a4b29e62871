"""`flow resume --upgrade-bundle` on a real desktop: a version that changes a step the run already did is refused
(exit 6, nothing sent); one that changes only what is left is adopted, journaled, and the run finishes with one row."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from tests.e2e.demo_harness import BUNDLE_DIR
from tests.support.cli import flow_env, run_flow

pytestmark = pytest.mark.timeout(240)
PARAMS = ["--param", "vendor=ACME Corp", "--param", "amount=1250.50"]


def _version(tmp_path: Path, name: str, step_id: str, intent: str) -> Path:
    dest = tmp_path / name
    shutil.copytree(BUNDLE_DIR, dest)
    flow = yaml.safe_load((dest / "flow.yaml").read_text())
    next(s for s in flow["steps"] if s["id"] == step_id)["intent"] = intent
    (dest / "flow.yaml").write_text(yaml.safe_dump(flow, sort_keys=False))
    return dest


def test_resume_upgrades_a_bundle_only_where_the_run_has_not_been(tmp_path, demo_app):
    app = demo_app("normal")
    env = flow_env(tmp_path, DEMO_DB_DSN=f"sqlite:///{app.db_path}")
    runs = tmp_path / "runs"
    run_dir = runs / "run"
    r = run_flow(["replay", str(BUNDLE_DIR), "--url", app.xvnc.url, "--durable", "--run-dir", str(run_dir), *PARAMS],
                 tmp_path, env=dict(env, FLOW_CRASH_AT="checkpoint:renamed@save"))
    assert r.returncode == -9, r.stderr
    assert run_flow(["reconcile", str(runs)], tmp_path, env=env).returncode == 0

    bad = run_flow(["resume", str(run_dir), "--upgrade-bundle", str(_version(tmp_path, "v2", "save", "Save it"))], tmp_path, env=env)
    assert bad.returncode == 6, bad.stdout + bad.stderr
    assert "step 'save' changed" in bad.stderr and "Traceback" not in bad.stderr
    good = run_flow(["resume", str(run_dir), "--json", "--upgrade-bundle", str(_version(tmp_path, "v3", "back", "Back to the list"))],
                    tmp_path, env=env)
    assert good.returncode == 0, good.stdout + good.stderr
    assert json.loads(good.stdout)["state"] == "COMPLETED"
    recs = [json.loads(l) for l in (run_dir / "journal.jsonl").read_text().splitlines()]
    assert [r["data"]["bundle_dir"] for r in recs if r["type"] == "bundle_upgraded"] == ["upgrades/1"]
    assert [(v, a) for _, v, a, _ in app.rows()] == [("ACME Corp", 1250.5)]
