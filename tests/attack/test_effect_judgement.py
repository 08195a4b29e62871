"""Effect judgement against the baseline (SPEC §8), on the real demo app and its SQLite system of record.

Each case is a variant of the demo bundle whose save step declares a different effect; the run goes through
`flow replay --durable` over Xvnc, and the rows the app wrote are counted afterwards. A value that already held
before Save never confirms it, a change that is not the declared one is never "absent", and a ledger that cannot
be read before Save means Save is never clicked.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.demo_harness import BUNDLE_DIR
from tests.support.cli import flow_env, run_flow

pytestmark = pytest.mark.timeout(180)
PARAMS = ["--param", "vendor=ACME Corp", "--param", "amount=1250.50"]
MATCHING = "SELECT count(*) FROM invoices WHERE vendor = :vendor AND amount = :amount"


def variant(tmp_path: Path, **effect: Any) -> Path:
    """A copy of the demo bundle whose save step's effect is replaced by `effect` (kind sql, DSN from DEMO_DB_DSN)."""
    root = tmp_path / "bundle"
    shutil.copytree(BUNDLE_DIR, root)
    flow = yaml.safe_load((root / "flow.yaml").read_text())
    save = next(s for s in flow["steps"] if s["id"] == "save")
    save["effect"] = {"kind": "sql", "dsn_env": "DEMO_DB_DSN", **effect}
    (root / "flow.yaml").write_text(yaml.safe_dump(flow, sort_keys=False))
    return root


def seed_row(db: Path, vendor: str = "ACME Corp", amount: float = 1250.5) -> None:
    c = sqlite3.connect(db)
    try:
        c.execute("INSERT INTO invoices (vendor, amount, created_at) VALUES (?, ?, '2026-01-01T00:00:00+00:00')", (vendor, amount))
        c.commit()
    finally:
        c.close()


def replay(tmp_path: Path, app: Any, bundle: Path, dsn: str | None = None):
    env = flow_env(tmp_path, DEMO_DB_DSN=dsn or f"sqlite:///{app.db_path}")
    run_dir = tmp_path / "run"
    r = run_flow(["replay", str(bundle), "--url", app.xvnc.url, "--durable", "--run-dir", str(run_dir), *PARAMS], tmp_path, env=env)
    return env, run_dir, r


def journal(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines() if line.strip()]


def dispatched(run_dir: Path, step: str) -> int:
    return sum(1 for r in journal(run_dir) if r["type"] == "action_dispatched" and r["step"] == step)


def state(run_dir: Path) -> dict:
    return json.loads((run_dir / "state.json").read_text())


def test_a_value_that_already_holds_halts_before_save_and_writes_nothing(tmp_path, demo_app):
    app = demo_app("normal")
    seed_row(app.db_path)  # the count the step expects is already 1 before Save
    env, run_dir, r = replay(tmp_path, app, variant(tmp_path, query=MATCHING, expect={"equals": 1}, timeout_s=2))
    assert r.returncode == 3, r.stderr + r.stdout
    st = state(run_dir)
    assert (st["state"], st["halt_category"], st["transaction_outcome"]) == ("PAUSED", "effect", "HALTED_BEFORE_EFFECT")
    assert "already equals 1" in st["message"]
    assert dispatched(run_dir, "save") == 0  # positively before the input: no action_dispatched
    assert len(app.rows()) == 1  # only the seeded row


def test_a_dropped_write_with_no_expectation_is_not_confirmed_by_an_older_row(tmp_path, demo_app):
    app = demo_app("normal", refute_save=True)  # the app shows "Saved" and writes nothing
    seed_row(app.db_path)
    env, run_dir, r = replay(tmp_path, app, variant(tmp_path, query=MATCHING, timeout_s=2))
    assert r.returncode == 3, r.stderr + r.stdout  # not COMPLETED
    st = state(run_dir)
    assert (st["halt_category"], st["transaction_outcome"]) == ("effect", "HALTED_BEFORE_EFFECT")
    verdict = next(r for r in journal(run_dir) if r["type"] == "effect_verified")["data"]
    assert verdict["verdict"] == "ABSENT" and verdict["baseline"]["value"] == verdict["observed"]["value"] == 1
    assert len(app.rows()) == 1


def test_a_landed_write_that_is_not_the_declared_value_is_conflicting_and_never_sent_again(tmp_path, demo_app):
    app = demo_app("normal")
    # the author expected two invoices in all; Save makes one: a change, but not the declared one
    env, run_dir, r = replay(tmp_path, app, variant(tmp_path, query="SELECT count(*) FROM invoices", expect={"equals": 2}, timeout_s=2))
    assert r.returncode == 3, r.stderr + r.stdout
    st = state(run_dir)
    assert st["transaction_outcome"] == "RECONCILIATION_REQUIRED"
    assert next(r for r in journal(run_dir) if r["type"] == "effect_verified")["data"]["verdict"] == "CONFLICTING"
    assert len(app.rows()) == 1
    # an operator who says continue gets no second row: the re-read stays unknown and resume refuses
    assert run_flow(["approve", str(run_dir), "--decision", "continue", "--operator", "ops"], tmp_path, env=env).returncode == 0
    res = run_flow(["resume", str(run_dir)], tmp_path, env=env)
    assert res.returncode == 6, res.stderr + res.stdout
    assert dispatched(run_dir, "save") == 1 and len(app.rows()) == 1


def test_an_unreadable_ledger_means_save_is_never_clicked(tmp_path, demo_app):
    app = demo_app("normal")
    garbage = tmp_path / "ledger.db"
    garbage.write_bytes(b"this is not an SQLite database" * 100)
    env, run_dir, r = replay(tmp_path, app, variant(tmp_path, query=MATCHING, expect={"increase_by": 1}, timeout_s=2),
                             dsn=f"sqlite:///{garbage}")
    # the preflight reads the ledger once before the first input: refused there (exit 2), not at Save
    assert r.returncode == 2, r.stderr + r.stdout
    assert "step 'save'" in r.stderr and "DEMO_DB_DSN" in r.stderr and "cannot be read before the run starts" in r.stderr
    assert not run_dir.exists()  # no run, so no action_dispatched at all
    assert app.rows() == []
    assert app.current_screen() == "list"  # not even the first click reached the app


def test_the_saved_amount_compares_as_a_number(tmp_path, demo_app):
    app = demo_app("normal")
    bundle = variant(tmp_path, query="SELECT amount FROM invoices WHERE vendor = :vendor", expect={"equals": "1250.50"}, timeout_s=5)
    env, run_dir, r = replay(tmp_path, app, bundle)
    assert r.returncode == 0, r.stderr + r.stdout  # the ledger's REAL 1250.5 is the declared '1250.50'
    assert [(v, a) for _, v, a, _ in app.rows()] == [("ACME Corp", 1250.5)]
