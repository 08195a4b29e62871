"""Effect judgement against the baseline (SPEC §8), on the real demo app and its SQLite system of record.

Each case is a variant of the demo bundle whose save step declares a different effect; the run goes through
`flow replay --durable` over Xvnc, and the rows the app wrote are counted afterwards. A value that already held
before Save never confirms it, a change that is not the declared one is never "absent", and a ledger that cannot
be read before Save means Save is never clicked. On every store (`judge`: the real app with `flow` processes, their runs in a run
directory or a PostgreSQL schema, or the recorded fixture with in-process commands on the memory store; its "Save
writes nothing" app writes to a database nobody reads).
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.attack.attack_support import STORES, DemoRuns, RunFiles
from tests.e2e.demo_harness import BUNDLE_DIR

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
        c.execute(
            "INSERT INTO invoices (vendor, amount, created_at) VALUES (?, ?, '2026-01-01T00:00:00+00:00')",
            (vendor, amount),
        )
        c.commit()
    finally:
        c.close()


@pytest.fixture(params=STORES)
def judge(request, tmp_path, monkeypatch) -> Any:
    """start(refute_save=False) -> DemoRuns: the demo app and `flow` on each store."""
    return lambda refute_save=False: DemoRuns.start(request.param, request, tmp_path, monkeypatch, refute_save)


def replay(tmp_path: Path, demo: DemoRuns, bundle: Path, dsn: str | None = None) -> tuple[Path, Any]:
    run_dir = demo.ref("run")
    r = demo.flow(
        ["replay", bundle, "--url", demo.url, "--durable", "--run-dir", run_dir, *demo.store_args(), *PARAMS],
        **({"DEMO_DB_DSN": dsn} if dsn else {}),
    )
    return run_dir, r


def dispatched(run_dir: Path, step: str) -> int:
    return sum(1 for r in RunFiles(run_dir).records() if r["type"] == "action_dispatched" and r["step"] == step)


def test_a_value_that_already_holds_halts_before_save_and_writes_nothing(tmp_path, judge):
    demo = judge()
    seed_row(demo.db)  # the count the step expects is already 1 before Save
    run_dir, r = replay(tmp_path, demo, variant(tmp_path, query=MATCHING, expect={"equals": 1}, timeout_s=2))
    assert r.returncode == 3, r.stderr + r.stdout
    st = demo.state(run_dir)
    assert (st["state"], st["halt_category"], st["transaction_outcome"]) == ("PAUSED", "effect", "HALTED_BEFORE_EFFECT")
    assert "already equals 1" in st["message"]
    assert dispatched(run_dir, "save") == 0  # positively before the input: no action_dispatched
    assert len(demo.rows()) == 1  # only the seeded row


def test_a_dropped_write_with_no_expectation_is_not_confirmed_by_an_older_row(tmp_path, judge):
    demo = judge(refute_save=True)  # the app shows "Saved" and writes nothing
    seed_row(demo.db)
    run_dir, r = replay(tmp_path, demo, variant(tmp_path, query=MATCHING, timeout_s=2))
    assert r.returncode == 3, r.stderr + r.stdout  # not COMPLETED
    st = demo.state(run_dir)
    assert (st["halt_category"], st["transaction_outcome"]) == ("effect", "HALTED_BEFORE_EFFECT")
    verdict = next(r for r in RunFiles(run_dir).records() if r["type"] == "effect_verified")["data"]
    assert verdict["verdict"] == "ABSENT" and verdict["baseline"]["value"] == verdict["observed"]["value"] == 1
    assert len(demo.rows()) == 1


def test_a_landed_write_that_is_not_the_declared_value_is_conflicting_and_never_sent_again(tmp_path, judge):
    demo = judge()
    # the author expected two invoices in all; Save makes one: a change, but not the declared one
    run_dir, r = replay(
        tmp_path, demo, variant(tmp_path, query="SELECT count(*) FROM invoices", expect={"equals": 2}, timeout_s=2)
    )
    assert r.returncode == 3, r.stderr + r.stdout
    st = demo.state(run_dir)
    assert st["transaction_outcome"] == "RECONCILIATION_REQUIRED"
    assert (
        next(r for r in RunFiles(run_dir).records() if r["type"] == "effect_verified")["data"]["verdict"]
        == "CONFLICTING"
    )
    assert len(demo.rows()) == 1
    # an operator who says continue gets no second row: the re-read stays unknown and resume refuses
    assert demo.flow(["approve", run_dir, "--decision", "continue", "--operator", "ops"]).returncode == 0
    res = demo.flow(["resume", run_dir])
    assert res.returncode == 6, res.stderr + res.stdout
    assert dispatched(run_dir, "save") == 1 and len(demo.rows()) == 1


def test_an_unreadable_ledger_means_save_is_never_clicked(tmp_path, judge):
    demo = judge()
    garbage = tmp_path / "ledger.db"
    garbage.write_bytes(b"this is not an SQLite database" * 100)
    run_dir, r = replay(
        tmp_path,
        demo,
        variant(tmp_path, query=MATCHING, expect={"increase_by": 1}, timeout_s=2),
        dsn=f"sqlite:///{garbage}",
    )
    # the preflight reads the ledger once before the first input: refused there (exit 2), not at Save
    assert r.returncode == 2, r.stderr + r.stdout
    assert (
        "step 'save'" in r.stderr and "DEMO_DB_DSN" in r.stderr and "cannot be read before the run starts" in r.stderr
    )
    assert not RunFiles(run_dir).exists("journal.jsonl")  # no run, so no action_dispatched at all
    assert demo.store != "filesystem" or not run_dir.exists()
    assert demo.rows() == []
    assert demo.on_start_screen()  # not even the first click reached the app


def test_the_saved_amount_compares_as_a_number(tmp_path, judge):
    demo = judge()
    bundle = variant(
        tmp_path, query="SELECT amount FROM invoices WHERE vendor = :vendor", expect={"equals": "1250.50"}, timeout_s=5
    )
    run_dir, r = replay(tmp_path, demo, bundle)
    assert r.returncode == 0, r.stderr + r.stdout  # the ledger's REAL 1250.5 is the declared '1250.50'
    assert demo.rows() == [("ACME Corp", 1250.5)]
