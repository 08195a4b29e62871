"""A demo bundle whose Save step's DSN names a missing database is refused before any input reaches the app: the
real Tk app on a real Xvnc keeps its screen, no row is written, no run directory exists (issue 12, finding 8)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.e2e.demo_harness import BUNDLE_DIR, capture
from tests.support.cli import flow_env, run_flow

pytestmark = pytest.mark.timeout(120)


def test_a_save_step_whose_database_is_missing_stops_the_run_before_the_first_input(tmp_path, demo_app, xvnc):
    app = demo_app("normal")
    app.wait_screen("list")
    before = capture(xvnc)
    run_dir = tmp_path / "run"
    missing = tmp_path / "nowhere" / "invoices.db"
    args = [
        "replay",
        str(BUNDLE_DIR),
        "--url",
        xvnc.url,
        "--run-dir",
        str(run_dir),
        "--param",
        "vendor=ACME Corp",
        "--param",
        "amount=1250.50",
    ]
    r = run_flow(args, tmp_path, env=flow_env(tmp_path, DEMO_DB_DSN=f"sqlite:///{missing}"))
    assert r.returncode == 2, r.stdout + r.stderr
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert "step 'save'" in lines[0] and "DEMO_DB_DSN" in lines[0] and "not found" in lines[0], lines[0]
    assert not run_dir.exists()  # no journal at all, so certainly no action_dispatched
    assert app.current_screen() == "list" and app.rows() == []
    assert np.array_equal(capture(xvnc), before)  # not a pixel moved: no click, no key reached the app
