"""Issue 33 item 6: a save whose screen check fails after its input was sent, while the database (declared, readable)
holds the row. The run reads the effect anyway and says the write landed; nothing it prints suggests running the
bundle again (which would write a second row); the one command it offers, `flow approve --decision reconcile`, is
accepted on that (non-durable) run and settles it.

On main the effect was never read after a failed postcondition: FAILED / RECONCILIATION_REQUIRED, effect
NOT_VERIFIED, and the report's one next command was the whole bundle again with `--durable`."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import yaml

from openadapt_flow.backends.fake import FakeBackend
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.report.render import write_reports
from openadapt_flow.runtime.runs import replay
from openadapt_flow.runtime.start.launch import ReplayRequest
from tests.support.screens import Canvas, crop, save_png

pytestmark = pytest.mark.timeout(90)

BOX = (100, 100, 120, 40)


def home():
    return Canvas().text(20, 20, "Ledger").button(100, 100, "Post").array()


def saved_elsewhere():  # the app saved, but shows its message where the recording did not (the window moved)
    return Canvas().text(20, 20, "Ledger").text(300, 400, "Done").array()


def bundle(root: Path, db: Path) -> Path:
    save_png(root / "templates/post.png", crop(home(), BOX))
    step = {
        "id": "post",
        "intent": "Post it",
        "action": "click",
        "target": {"template": "templates/post.png", "region": list(BOX), "text": "Post"},
        "expect": [{"text_present": "Posted"}],
        "timeout_s": 1,
        "effect": {
            "kind": "sql",
            "dsn": f"sqlite:///{db}",
            "timeout_s": 0.5,
            "expect": {"increase_by": 1},
            "query": "select count(*) from posts where vendor = :vendor",
        },
    }
    flow = {
        "schema": "openadapt-flow/bundle@1",
        "name": "post",
        "screen": {"width": 640, "height": 480},
        "params": {"vendor": {"type": "string", "required": True}},
        "steps": [step],
    }
    (root / "flow.yaml").write_text(yaml.safe_dump(flow, sort_keys=False))
    return root


def run_post(tmp_path: Path, durable: bool = False):
    """A replay whose save lands its row and then fails its screen check; the run's outcome and the database."""
    db = tmp_path / "ledger.db"
    c = sqlite3.connect(db)
    c.execute("create table posts(id integer primary key, vendor text)")
    c.commit()
    c.close()

    def on_click(fake, ev):
        if ev[0] != "click":  # the pointer's park before the first step: the app does not react
            return
        c = sqlite3.connect(db)
        c.execute("insert into posts(vendor) values ('ACME')")
        c.commit()
        c.close()
        fake.set_frame(saved_elsewhere())

    cfg = DeployConfig.model_validate(
        {"schema": "openadapt-flow/config@1", "runtime": {"runs_root": str(tmp_path / "runs"), "settle_quiet_s": 0.01}}
    )
    req = ReplayRequest(
        bundle=bundle(tmp_path / "b", db),
        params={"vendor": "ACME"},
        backend=BackendSpec(kind="fake"),
        config=cfg,
        run_dir=tmp_path / "run",
        durable=durable,
    )
    out = replay(req, backend_factory=lambda spec: FakeBackend(home(), on_click), reporter=write_reports)
    return out, db


@pytest.fixture
def stopped(flow, tmp_path):
    """A non-durable replay whose save landed its row and then failed its screen check."""
    return run_post(tmp_path)


def test_the_effect_is_read_after_the_failed_check_and_says_the_row_landed(stopped):
    out, db = stopped
    assert (out.state, out.exit_code, out.category) == ("FAILED_AFTER_EFFECT", 7, "postcondition"), out.message
    assert "its write landed (the effect read CONFIRMED" in out.message
    records = [json.loads(line) for line in (out.run_dir / "journal.jsonl").read_text().splitlines()]
    verified = [r for r in records if r["type"] == "effect_verified"]
    assert [v["data"]["verdict"] for v in verified] == ["CONFIRMED"]
    assert verified[0]["seq"] > next(r["seq"] for r in records if r["type"] == "postconditions")
    report = json.loads((out.run_dir / "report.json").read_text())
    assert report["landed"] == ["post"] and report["transaction_outcome"] == "RECONCILIATION_REQUIRED"
    assert any("write landed (its effect read CONFIRMED)" in a for a in report["advice"])


def test_no_rerun_is_suggested_and_the_suggested_reconcile_is_accepted(stopped, flow):
    out, db = stopped
    run = str(out.run_dir)
    status = flow("status", run)
    assert status.code == 0, status.err
    js = json.loads(flow("status", run, "--json").out)
    everything = (
        status.out
        + json.dumps(js)
        + (out.run_dir / "REPORT.md").read_text()
        + (out.run_dir / "report.html").read_text()
    )
    assert "flow replay" not in everything and "--durable" not in everything, everything
    suggested = [c for c in js["next_commands"] if "--decision reconcile" in c]
    assert suggested and suggested[0].startswith(f"flow approve {run} --decision reconcile --effect landed")

    r = flow("approve", run, "--decision", "reconcile", "--effect", "landed", "--operator", "alice")
    assert r.code == 0, r.err
    assert "recorded: reconcile by alice" in r.out and "nothing is sent to the desktop" in r.out
    state = json.loads((out.run_dir / "state.json").read_text())
    assert state["state"] == "FAILED_AFTER_EFFECT" and state["transaction_outcome"] == "HALTED_BEFORE_EFFECT"
    report = json.loads((out.run_dir / "report.json").read_text())
    assert report["next_commands"] == [] and report["landed"] == ["post"]
    assert [d["decision"] for d in report["decisions"]] == ["reconcile"]
    again = flow("approve", run, "--decision", "reconcile", "--effect", "landed", "--operator", "alice")
    assert again.code == 0 and "already recorded" in again.out  # the same answer again is a no-op
    other = flow("approve", run, "--decision", "reconcile", "--effect", "absent", "--operator", "alice")
    assert other.code == 6 and "nothing to reconcile" in other.err
    assert sqlite3.connect(db).execute("select count(*) from posts").fetchone()[0] == 1


def test_a_durable_run_pauses_saying_the_row_landed_and_its_reconcile_is_accepted(flow, tmp_path, monkeypatch):
    monkeypatch.setenv("FLOW_DECISION_KEY_FILE", str(tmp_path / "decision.key"))
    out, db = run_post(tmp_path, durable=True)
    assert (out.state, out.exit_code) == ("PAUSED", 3), out.message
    pending = json.loads((out.run_dir / "pending_escalation.json").read_text())
    assert "its write landed" in pending["message"] and pending["transaction_outcome"] == "RECONCILIATION_REQUIRED"
    assert "reconcile" in pending["allowed_decisions"]
    js = json.loads(flow("status", str(out.run_dir), "--json").out)
    assert not any("flow replay" in c for c in js["next_commands"])
    r = flow("approve", str(out.run_dir), "--decision", "reconcile", "--effect", "landed", "--operator", "alice")
    assert r.code == 0 and "flow resume" in r.out, r.err
    assert sqlite3.connect(db).execute("select count(*) from posts").fetchone()[0] == 1
