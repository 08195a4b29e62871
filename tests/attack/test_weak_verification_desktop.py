"""A step with nothing declared to verify it is not "verified" for free (real Xvnc, the demo app, the CLI).

`open-form` without its `expect` still changes the screen where it clicked (the form opens): weakly verified, and
the report says so. A click on a plain label changes nothing: the run halts (postcondition) instead of recording
a verified step with zero checks.

Filesystem only: what it pins is verification on a real toolkit's screen, not the store (the runtime's
weak-verification rules run on both stores in tests/unit).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from tests.e2e.demo_harness import BUNDLE_DIR
from tests.support.cli import flow_env, run_flow

pytestmark = pytest.mark.timeout(240)


def bare_bundle(root: Path) -> Path:
    shutil.copytree(BUNDLE_DIR, root)
    flow = yaml.safe_load((root / "flow.yaml").read_text())
    open_form = {k: v for k, v in flow["steps"][0].items() if k != "expect"}
    poke = {
        "id": "poke-label",
        "intent": "Click the Amount label (a label does nothing)",
        "action": "click",
        "target": {"text": "Amount"},
        "timeout_s": 2,
    }
    flow["steps"] = [open_form, poke]
    (root / "flow.yaml").write_text(yaml.safe_dump(flow, sort_keys=False))
    return root


def test_a_step_with_no_checks_is_weakly_verified_or_halts_on_a_real_desktop(tmp_path, demo_app):
    app = demo_app("normal")
    env = flow_env(tmp_path, DEMO_DB_DSN=f"sqlite:///{app.db_path}")
    bundle = bare_bundle(tmp_path / "bundle")
    v = run_flow(["validate", str(bundle), "--json"], tmp_path, env=env)
    assert v.returncode == 0 and len(json.loads(v.stdout)["warnings"]) == 2

    run_dir = tmp_path / "run"
    r = run_flow(
        [
            "replay",
            str(bundle),
            "--url",
            app.xvnc.url,
            "--run-dir",
            str(run_dir),
            "--param",
            "vendor=ACME",
            "--param",
            "amount=1",
        ],
        tmp_path,
        env=env,
    )
    assert r.returncode == 1, r.stdout + r.stderr  # FAILED: the label click could not be verified
    app.wait_screen("form")  # the first click did open the form
    rep = json.loads((run_dir / "report.json").read_text())
    rows = {s["id"]: s for s in rep["steps"]}
    assert (rows["open-form"]["status"], rows["open-form"]["verification"]) == ("verified", "weak")
    assert rows["poke-label"]["status"] == "halted" and rep["halt"]["category"] == "postcondition"
    assert "did not change" in rep["halt"]["message"] and rep["halt"]["input_sent"] is True
    assert rep["weakly_verified"] == ["open-form"]
    assert "verified (weak)" in (run_dir / "REPORT.md").read_text()
    assert "verified (weak)" in (run_dir / "report.html").read_text()
