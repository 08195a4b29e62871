"""Issue 25, item 2: a teach on a `fixture:` run, then `flow resume` in a new process. The in-process fixture starts
again at its first screen, so the run is not where it stopped: resume refuses up front (exit 6) in one line that says
so and what to do, sends nothing and keeps the decision — instead of pausing again with "Save not found"."""

from __future__ import annotations

import json
import shlex

import pytest

from tests.support.demo_invoices import BUNDLE, FIXTURES, PARAMS
from tests.unit.report.report_runs import run_env

pytestmark = pytest.mark.timeout(120)


def _dispatches(run_dir) -> int:
    return sum(1 for line in (run_dir / "journal.jsonl").read_text().splitlines() if '"action_dispatched"' in line)


def test_resume_after_a_teach_on_a_fixture_says_the_screen_is_not_where_the_run_stopped(flow, tmp_path, monkeypatch):
    run_env(tmp_path, monkeypatch)
    run_dir = tmp_path / "twin"
    r = flow(
        "replay", str(BUNDLE), "--url", f"fixture:{FIXTURES / 'twin'}", "--durable", "--run-dir", str(run_dir), *PARAMS
    )
    assert r.code == 3, (r.out, r.err)
    rep = json.loads((run_dir / "report.json").read_text())
    assert rep["halt"]["step"] == "save"  # two identical Save buttons, after three steps of input
    teach = next(c for c in rep["next_commands"] if "--decision teach" in c)
    r = flow(*shlex.split(teach.replace('"$USER"', "ops"))[1:])
    assert r.code == 0, r.err
    sent = _dispatches(run_dir)
    r = flow("resume", str(run_dir))
    assert r.code == 6, (r.code, r.out, r.err)
    line = r.err.strip()
    assert len(line.splitlines()) == 1 and "the screen is not where the run stopped" in line, line
    assert "Start a new run instead" in line and f"flow patch apply {shlex.quote(str(run_dir))}" in line
    assert _dispatches(run_dir) == sent  # nothing was sent
    assert (run_dir / "approval.json").exists()  # the decision stays recorded, unused
    assert json.loads((run_dir / "state.json").read_text())["state"] == "PAUSED"


def test_a_run_that_stopped_before_any_input_still_resumes_on_a_fixture(flow, tmp_path, monkeypatch):
    from tests.unit.report.report_runs import ambiguous_run

    run_env(tmp_path, monkeypatch)
    run_dir = ambiguous_run(tmp_path).run_dir
    assert flow("approve", str(run_dir), "--decision", "teach", "--point", "130,112", "--operator", "ops").code == 0
    r = flow("resume", str(run_dir))
    assert r.code == 0, (r.out, r.err)
