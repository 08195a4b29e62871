"""Run directories written by the previous release (tests/data/runs-v1, see its README) validate against today's
run-record models, and today's CLI approves and resumes them to completion with exactly one system-of-record row.

The target is the demo's recorded fixture served over real RFB (no X needed). The fixture starts at its initial
screen; the run paused (or was interrupted) with the form partly filled, so a non-durable replay of the steps the
run already verified first brings the served fixture to the screen the run's checkpoint describes — as an operator
restores a desktop before resuming.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from tests.support.cli import REPO, flow_env, run_flow
from tests.support.demo_invoices import BUNDLE, FIXTURES, PARAMS, invoice_rows
from tests.support.fixtures import Served
from tests.support.run_records import Tally, check_run_dir

pytestmark = pytest.mark.timeout(240)
DATA = REPO / "tests" / "data" / "runs-v1"
FIXTURE = FIXTURES / "normal"


def _prefix_bundle(tmp_path: Path, steps: int) -> Path:
    """The demo bundle cut to its first `steps` steps."""
    bundle = tmp_path / "prefix"
    shutil.copytree(BUNDLE, bundle)
    flow = yaml.safe_load((bundle / "flow.yaml").read_text())
    flow["steps"] = flow["steps"][:steps]
    (bundle / "flow.yaml").write_text(yaml.safe_dump(flow, sort_keys=False))
    return bundle


def _copy(tmp_path: Path, name: str) -> tuple[Path, dict[str, str]]:
    """A copy of the stored run and its keys (nothing is written under tests/data), and the env that uses them."""
    run = tmp_path / name
    shutil.copytree(DATA / name, run)
    for key in ("install.key", "decision.key"):
        shutil.copyfile(DATA / key, tmp_path / key)
    env = flow_env(
        tmp_path, FLOW_DECISION_KEY_FILE=str(tmp_path / "decision.key"), DEMO_DB_DSN=f"sqlite:///{tmp_path / 'sor.db'}"
    )
    return run, env


def _validates(run: Path) -> None:
    keys = [(DATA / k).read_bytes().strip() for k in ("install.key", "decision.key")]
    tally = Tally()
    problems = check_run_dir(run, keys[:1], keys[1:], tally)
    assert problems == []
    assert tally.unproven == 0 and tally.files == len(list(run.glob("*.json")))
    assert tally.records == len((run / "journal.jsonl").read_text().splitlines())


@pytest.mark.parametrize(("name", "verified", "state"), [("paused", 3, "PAUSED"), ("interrupted", 2, "INTERRUPTED")])
def test_a_previous_release_run_validates_and_resumes_once(tmp_path, name, verified, state):
    run, env = _copy(tmp_path, name)
    _validates(run)
    st = json.loads(run_flow(["status", str(run), "--json"], tmp_path, env=env).stdout)
    assert st["state"] == state
    assert json.loads((run / "checkpoint.json").read_text())["next_index"] == verified
    db = tmp_path / "sor.db"
    with Served(FIXTURE, tmp_path, "--db", str(db), "--keep-state", env=env) as served:
        r = run_flow(
            [
                "replay",
                str(_prefix_bundle(tmp_path, verified)),
                "--url",
                served.url,
                "--run-dir",
                str(tmp_path / "restore"),
                *PARAMS,
            ],
            tmp_path,
            env=env,
        )
        assert r.returncode == 0, r.stderr + r.stdout
        if state == "PAUSED":
            # an approval is needed: resume refuses without one, then the operator approves
            assert run_flow(["resume", str(run), "--url", served.url], tmp_path, env=env).returncode == 6
            a = run_flow(["approve", str(run), "--decision", "continue", "--operator", "alice"], tmp_path, env=env)
            assert a.returncode == 0, a.stderr
        r = run_flow(["resume", str(run), "--url", served.url, "--json"], tmp_path, env=env)
        assert r.returncode == 0, r.stderr + r.stdout
        assert json.loads(r.stdout)["state"] == "COMPLETED"
        again = run_flow(["resume", str(run), "--url", served.url], tmp_path, env=env)
    assert again.returncode == 0 and "already terminal" in again.stdout + again.stderr
    assert invoice_rows(db) == [("ACME Corp", 1250.5)]  # exactly one row: the save, performed once
    rep = json.loads((run / "report.json").read_text())
    assert [s["status"] for s in rep["steps"]] == ["verified"] * 5
