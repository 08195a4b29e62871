"""Whole-change effects end to end (issue 33 item 4): the demo bundle's save declared as the whole change it makes,
replayed by `flow replay` against the recorded demo app, its system of record a real SQLite file.

The app's save writes the invoice and, through a trigger standing in for a leftover row the save commits with it
(the issue's DB Browser batch: a halted item's half-typed row saved by the next item's Ctrl+S), one more row. A
count of the invoice's own row cannot see that; the whole-change effect halts RECONCILIATION_REQUIRED and the
report lists the extra row. With no trigger the same bundle completes, its effect CONFIRMED."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
import yaml

from openadapt_flow.backends.fixture import SOR_ENV
from tests.support.cli import flow_env, run_flow
from tests.support.demo_invoices import BUNDLE, FIXTURES, PARAMS

pytestmark = pytest.mark.timeout(180)

LEFTOVER = (
    "CREATE TRIGGER leftover AFTER INSERT ON invoices WHEN NEW.vendor <> 'Chen Wei' BEGIN "
    "INSERT INTO invoices (vendor, amount, created_at) VALUES ('Chen Wei', NULL, NEW.created_at); END"
)


def whole_change_bundle(tmp_path: Path) -> Path:
    out = tmp_path / "bundle"
    shutil.copytree(BUNDLE, out)
    doc = yaml.safe_load((out / "flow.yaml").read_text())
    save = next(s for s in doc["steps"] if s["id"] == "save")
    save["effect"] = {
        "kind": "sql",
        "dsn_env": "DEMO_DB_DSN",
        "timeout_s": 5,
        "changes": [{"table": "invoices", "added": {"vendor": "{vendor}", "amount": "{amount}"}}],
    }
    (out / "flow.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


def database(tmp_path: Path, *extra: str) -> Path:
    db = tmp_path / "sor.db"
    c = sqlite3.connect(db)
    c.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, vendor TEXT, amount REAL, created_at TEXT)")
    c.execute("INSERT INTO invoices (vendor, amount, created_at) VALUES ('Globex', 99.5, '2024-01-01T00:00:00')")
    for st in extra:
        c.execute(st)
    c.commit()
    c.close()
    return db


def replay(tmp_path: Path, db: Path) -> tuple[int, dict, str]:
    run_dir = tmp_path / "run"
    r = run_flow(
        [
            "replay",
            str(whole_change_bundle(tmp_path)),
            "--url",
            f"fixture:{FIXTURES / 'normal'}",
            "--run-dir",
            str(run_dir),
            *PARAMS,
        ],
        tmp_path,
        env=flow_env(tmp_path, DEMO_DB_DSN=f"sqlite:///{db}", **{SOR_ENV: str(db)}),
    )
    assert "Traceback" not in r.stderr, r.stderr
    return r.returncode, json.loads((run_dir / "report.json").read_text()), r.stdout + r.stderr


def test_a_save_that_writes_one_extra_row_halts_for_reconciliation_listing_it(tmp_path):
    db = database(tmp_path, LEFTOVER)
    code, report, out = replay(tmp_path, db)
    assert code == 1 and report["state"] == "FAILED", out
    assert report["transaction_outcome"] == "RECONCILIATION_REQUIRED"
    assert report["halt"]["step"] == "save" and report["halt"]["category"] == "collateral", report["halt"]
    assert "collateral write: 1 change(s)" in report["halt"]["message"]
    assert report["collateral"] == [
        {
            "step": "save",
            "table": "invoices",
            "kind": "added",
            "key": "3",
            "values": {
                "id": 3,
                "vendor": "Chen Wei",
                "amount": None,
                "created_at": report["collateral"][0]["values"]["created_at"],
            },
        }
    ]
    save = next(s for s in report["steps"] if s["id"] == "save")
    assert [(c["key"], c["expected"]) for c in save["effect"]["changes"]] == [("3", False), ("2", True)]
    # what to do next: check and record the answer; never the bundle again
    assert report["next_commands"] and all("--decision reconcile" in c for c in report["next_commands"])
    md = (tmp_path / "run" / "REPORT.md").read_text()
    assert "**Collateral writes**" in md and "invoices: added row 3" in md and "'Chen Wei'" in md
    assert "Collateral writes" in (tmp_path / "run" / "report.html").read_text()
    assert "flow replay" not in md + out
    assert "effect CONFLICTING (1 rows before, 3 rows after; 1 collateral)" in md  # counts, never the digests
    assert "'tables'" not in md and len((tmp_path / "run" / "report.json").read_text()) < 60_000


def test_the_same_save_without_the_extra_row_is_confirmed(tmp_path):
    db = database(tmp_path)
    code, report, out = replay(tmp_path, db)
    assert code == 0 and report["state"] == "COMPLETED", out
    save = next(s for s in report["steps"] if s["id"] == "save")
    assert save["effect"]["verdict"] == "CONFIRMED"
    assert [(c["table"], c["kind"], c["expected"]) for c in save["effect"]["changes"]] == [("invoices", "added", True)]
    assert report["collateral"] == []
