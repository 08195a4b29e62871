"""`flow resume --upgrade-bundle` on a real desktop: a version that changes a step the run already did is refused
(exit 6, nothing sent); one that changes only what is left is adopted, journaled, and the run finishes with one row.
On every store (`demo`: the real app with `flow` processes, their runs in a run directory or a PostgreSQL schema, or
the recorded fixture in process on the memory store)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from tests.attack.attack_support import DemoRuns
from tests.e2e.demo_harness import BUNDLE_DIR

pytestmark = pytest.mark.timeout(240)
PARAMS = ["--param", "vendor=ACME Corp", "--param", "amount=1250.50"]


def _version(tmp_path: Path, name: str, step_id: str, intent: str) -> Path:
    dest = tmp_path / name
    shutil.copytree(BUNDLE_DIR, dest)
    flow = yaml.safe_load((dest / "flow.yaml").read_text())
    next(s for s in flow["steps"] if s["id"] == step_id)["intent"] = intent
    (dest / "flow.yaml").write_text(yaml.safe_dump(flow, sort_keys=False))
    return dest


def test_resume_upgrades_a_bundle_only_where_the_run_has_not_been(tmp_path, demo: DemoRuns):
    run_dir = demo.ref("run")
    r = demo.replay(run_dir, BUNDLE_DIR, FLOW_CRASH_AT="checkpoint:renamed@save")
    assert r.returncode == -9, r.stderr
    assert demo.flow(["reconcile", *demo.scan_args()]).returncode == 0

    bad = demo.flow(["resume", run_dir, "--upgrade-bundle", _version(tmp_path, "v2", "save", "Save it")])
    assert bad.returncode == 6, bad.stdout + bad.stderr
    assert "step 'save' changed" in bad.stderr and "Traceback" not in bad.stderr
    good = demo.flow(
        ["resume", run_dir, "--json", "--upgrade-bundle", _version(tmp_path, "v3", "back", "Back to the list")]
    )
    assert good.returncode == 0, good.stdout + good.stderr
    assert json.loads(good.stdout)["state"] == "COMPLETED"
    recs = demo.records(run_dir)
    assert [r["data"]["bundle_dir"] for r in recs if r["type"] == "bundle_upgraded"] == ["upgrades/1"]
    assert demo.rows() == [("ACME Corp", 1250.5)]
