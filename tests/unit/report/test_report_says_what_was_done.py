"""Issue 25, item 6: a report says what was done — the params as bound (a secret masked), each effect's value, the
operator's note on a decision, after a teach the `flow patch apply` command, and plain words beside a transaction
outcome and beside the template rung's rank/shape/content figures."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from openadapt_flow.cli.app import build_app
from openadapt_flow.report.text import params_text
from tests.support.demo_invoices import BUNDLE
from tests.unit.report.report_runs import ambiguous_run, healthy_run, run_env

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def env(tmp_path, monkeypatch):
    run_env(tmp_path, monkeypatch)
    return tmp_path


def test_params_and_each_effects_value_are_in_the_report(env):
    run_dir = Path(healthy_run(env).run_dir)
    md, page = (run_dir / "REPORT.md").read_text(), (run_dir / "report.html").read_text()
    assert "- params: vendor=ACME Corp · amount=1250.5" in md
    assert "params vendor=ACME Corp · amount=1250.5" in page
    assert "effect CONFIRMED (0 before, 1 after)" in md and "effect CONFIRMED (0 before, 1 after)" in page


def test_a_secret_param_is_shown_masked():
    text = params_text({"user": "al", "password": {"secret_env": "FLOW_SECRET_PASSWORD"}})
    assert text == "user=al · password=•••• (secret, from env FLOW_SECRET_PASSWORD)"


def test_a_halt_has_plain_words_beside_its_outcome_and_its_figures(env):
    run_dir = Path(ambiguous_run(env).run_dir)
    md = (run_dir / "REPORT.md").read_text()
    assert "HALTED_BEFORE_EFFECT: the run stopped before the step's write was sent: nothing was written" in md
    assert "rank 1.00 (shape 1.00, content 1.00)" in md and "Figures: rank: how well the saved crop matches" in md
    assert "escalate: the run stays PAUSED and the decision goes to the next approval level" in md


def test_the_operators_note_and_after_a_teach_the_patch_apply_command(env):
    run_dir = Path(ambiguous_run(env).run_dir)
    app = build_app()
    r = CliRunner().invoke(
        app,
        [
            "approve",
            str(run_dir),
            "--decision",
            "teach",
            "--point",
            "130,112",
            "--operator",
            "ops",
            "--note",
            "the upper button is the real one",
        ],
    )
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, ["resume", str(run_dir)])
    assert r.exit_code == 0, r.output
    rep = json.loads((run_dir / "report.json").read_text())
    assert rep["state"] == "COMPLETED"
    apply = f"flow patch apply {shlex.quote(str(run_dir))} {shlex.quote(str(BUNDLE))}"
    assert rep["next_commands"] == [apply]
    md, page = (run_dir / "REPORT.md").read_text(), (run_dir / "report.html").read_text()
    assert "note: “the upper button is the real one”" in md and apply in md
    assert "the upper button is the real one" in page
