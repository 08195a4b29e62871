"""An outcome nothing checks, in the report (issue 35, finding 4): the demo bundle with its save's effect taken away
(its save then checked only by the literal "Saved" banner, which a wrong amount shows too) replays to COMPLETED;
the report says "outcome not verified" naming the step, not a plain "finished". The demo bundle as shipped (its
effect counts the row with the params) is a plain "finished"."""

from __future__ import annotations

import shutil

import pytest
import yaml

from openadapt_flow.backends.spec import parse_url
from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.report.model import build_report
from openadapt_flow.report.render import render_markdown, write_reports
from openadapt_flow.runtime.runs import replay
from openadapt_flow.runtime.start.launch import ReplayRequest
from openadapt_flow.store import RunDir
from tests.support.demo_invoices import BUNDLE, FIXTURES
from tests.unit.report.report_runs import PARAMS, run_env

pytestmark = pytest.mark.timeout(120)


def _run(tmp_path, bundle, name):
    cfg = DeployConfig.model_validate(
        {"schema": "openadapt-flow/config@1", "runtime": {"runs_root": str(tmp_path / "runs")}}
    )
    req = ReplayRequest(
        bundle=bundle,
        params=PARAMS,
        backend=parse_url(f"fixture:{FIXTURES / 'normal'}"),
        config=cfg,
        run_dir=tmp_path / name,
        durable=False,
    )
    out = replay(req, reporter=write_reports)
    assert out.state == "COMPLETED", out.message
    return build_report(RunDir(tmp_path / name))


def test_a_completed_run_whose_outcome_no_param_checked_says_so(tmp_path, monkeypatch):
    run_env(tmp_path, monkeypatch)
    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLE, bundle)
    doc = yaml.safe_load((bundle / "flow.yaml").read_text())
    for s in doc["steps"]:
        s.pop("effect", None)
        s.pop("identity", None)
    (bundle / "flow.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    rep = _run(tmp_path, bundle, "unverified")
    assert rep["bundle"]["unverified_outcome"] == "save", rep["bundle"]
    md = render_markdown(rep)
    assert "**outcome not verified: nothing that depends on the params checked step 'save'" in md, md[:600]
    assert "outcome: COMPLETED, outcome not verified (step 'save')" in md, md[:900]
    page = (tmp_path / "unverified" / "report.html").read_text()
    assert "outcome not verified" in page


def test_the_demo_bundle_as_shipped_is_a_plain_finished_run(tmp_path, monkeypatch):
    run_env(tmp_path, monkeypatch)
    rep = _run(tmp_path, BUNDLE, "verified")
    assert "unverified_outcome" not in rep["bundle"]
    assert "outcome not verified" not in render_markdown(rep)
