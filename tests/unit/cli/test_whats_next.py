"""Issue 25, items 3 and 4: every command that leaves a run waiting says what to run next, in words a person reads
(no Python reprs); `flow approve` has no default decision and says what each decision does; after a decision the
command says what happens next and where the report is; `flow worker --once` says what it scanned and what it did.

Real runs: the demo bundle on its recorded fixture with a look-alike "New invoice" button, so a durable run pauses
ambiguous at its first step before any input (tests/unit/report/report_runs.py)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from tests.support.demo_invoices import BUNDLE, PARAMS
from tests.unit.report.report_runs import ambiguous_run, run_env, twin_fixture

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def env(tmp_path, monkeypatch):
    run_env(tmp_path, monkeypatch)
    return tmp_path


def _flat(text: str) -> str:
    """Help text as words: rich's box drawing and line wrapping taken out."""
    return re.sub(r"\s+", " ", re.sub(r"[│╭╮╰╯─]", " ", text))


def test_a_durable_replay_that_pauses_prints_the_commands_to_run_next(flow, env):
    run_dir = env / "paused"
    r = flow(
        "replay",
        str(BUNDLE),
        "--durable",
        "--url",
        f"fixture:{twin_fixture(env / 'twin-fixture')}",
        "--run-dir",
        str(run_dir),
        *PARAMS,
    )
    assert r.code == 3, r.err
    run = shlex.quote(str(run_dir))
    lines = [ln.strip() for ln in r.out.splitlines()]
    assert f'flow approve {run} --decision teach --point 130,112 --operator "$USER"' in lines, r.out
    assert f"flow resume {run} --require-approval" in lines, r.out
    assert lines.index(f"flow resume {run} --require-approval") > lines.index("next:")


def test_status_says_the_state_in_words_and_the_next_command(flow, env):
    run_dir = Path(ambiguous_run(env).run_dir)
    r = flow("status", str(run_dir))
    assert r.code == 0, r.err
    assert "{" not in r.out and "['" not in r.out, r.out  # no dict or list reprs
    assert "state: PAUSED (awaiting_approval)" in r.out
    assert re.search(
        r"pending decision: pause pause-\w+ on step open-form \(ambiguous\); allowed: continue, ", r.out
    ), r.out
    assert "HALTED_BEFORE_EFFECT — the run stopped before the step's write was sent" in r.out
    assert f"flow resume {shlex.quote(str(run_dir))} --require-approval" in r.out.split("next:")[1]
    js = json.loads(flow("status", str(run_dir), "--json").out)
    assert js["next_commands"][-1] == f"flow resume {shlex.quote(str(run_dir))} --require-approval"


def test_approve_without_a_decision_is_refused_and_records_nothing(flow, env):
    run_dir = Path(ambiguous_run(env).run_dir)
    r = flow("approve", str(run_dir), "--operator", "ops")
    assert r.code == 2, (r.out, r.err)
    assert len(r.err.strip().splitlines()) == 1 and "--decision is required" in r.err
    assert not (run_dir / "approval.json").exists()


def test_approve_help_says_what_every_decision_does():
    from typer.testing import CliRunner

    from openadapt_flow.cli.app import build_app

    text = _flat(CliRunner().invoke(build_app("approve"), ["approve", "--help"], terminal_width=200).output)
    for words in (
        "continue: resume checks the live screen",
        "skip: the halted step is journaled as skipped",
        "reject: the run ends BLOCKED",
        "teach: your point",
        "escalate: the run stays PAUSED",
        "reconcile: says whether the uncertain write happened",
        "required, no default",
    ):
        assert words in text, (words, text)


def test_after_a_decision_the_command_says_what_happens_next_and_where_the_report_is(flow, env):
    run_dir = Path(ambiguous_run(env).run_dir)
    r = flow("approve", str(run_dir), "--decision", "continue", "--operator", "ops")
    assert r.code == 0, r.err
    run = shlex.quote(str(run_dir))
    assert (
        f"next: a `flow worker` watching this run's store picks it up; without one, run `flow resume {run} "
        "--require-approval`" in r.out
    )
    assert f"report: {run_dir / 'report.html'}" in r.out


def test_escalate_says_the_run_stays_paused_for_the_next_level(flow, env):
    run_dir = Path(ambiguous_run(env).run_dir)
    r = flow("approve", str(run_dir), "--decision", "escalate", "--operator", "ops")
    assert r.code == 0, r.err
    assert "next: the run stays PAUSED; the decision now belongs to level" in r.out


def test_worker_once_says_what_it_scanned_and_what_it_did(flow, env):
    run_dir = Path(ambiguous_run(env).run_dir)
    r = flow("worker", str(env), "--once")
    assert r.code == 0, r.err
    assert f"worker: scanned 1 run(s) in {env} (1 PAUSED); resumed none (no run is due" in r.out, r.out
    assert flow("approve", str(run_dir), "--decision", "continue", "--operator", "ops").code == 0
    r = flow("worker", str(env), "--once")
    assert r.code == 0, r.err
    assert f"worker: scanned 1 run(s) in {env} (1 PAUSED); resumed 1: {run_dir} -> " in r.out, r.out
