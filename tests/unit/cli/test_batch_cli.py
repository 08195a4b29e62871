"""`flow batch` on the demo bundle's recorded fixtures, in-process through the real entry point: one run per item,
results files, exit codes; the same batch again sends nothing; a halted item stops the batch; bad input sends nothing."""

from __future__ import annotations

import csv
import json
import sqlite3
from pathlib import Path

import pytest

from openadapt_flow.runtime import BatchResult
from tests.support.demo_invoices import BUNDLE, FIXTURES
from tests.unit.report.report_runs import run_env

pytestmark = pytest.mark.timeout(120)

ITEMS = "invoice,vendor,amount\nINV-1,ACME,12.50\nINV-2,Globex,99\nINV-3,Initech,7.25\n"


def _rows(tmp_path: Path) -> list[tuple[str, float]]:
    db = tmp_path / "sor.db"
    if not db.exists():
        return []
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT vendor, amount FROM invoices ORDER BY id").fetchall()


def _dispatched(root: Path) -> int:
    return sum(p.read_text().count('"action_dispatched"') for p in root.rglob("journal.jsonl"))


def _batch(flow, items: Path, fixture: str = "normal", *more: str):
    return flow(
        "batch", str(BUNDLE), "--items", str(items), "--key", "invoice", "--url", f"fixture:{FIXTURES / fixture}", *more
    )


def test_three_items_done_then_the_same_batch_again_sends_nothing(flow, tmp_path, monkeypatch):
    run_env(tmp_path, monkeypatch)
    items = tmp_path / "invoices.csv"
    items.write_text(ITEMS)
    r = _batch(flow, items)
    assert r.code == 0, (r.out, r.err)
    assert _rows(tmp_path) == [("ACME", 12.5), ("Globex", 99.0), ("Initech", 7.25)]
    folder = tmp_path / "runs" / "batch-invoices"
    lines = [json.loads(x) for x in (folder / "results.jsonl").read_text().splitlines()]
    for x in lines:
        BatchResult.model_validate(x)  # `flow schema batch-result` describes each line
    assert [(x["item"], x["key"], x["status"], x["run_dir"], x["reason"], x["effect"]) for x in lines] == [
        (2, "INV-1", "done", "runs/batch-invoices/001-INV-1", "", "CONFIRMED"),
        (3, "INV-2", "done", "runs/batch-invoices/002-INV-2", "", "CONFIRMED"),
        (4, "INV-3", "done", "runs/batch-invoices/003-INV-3", "", "CONFIRMED"),
    ]
    with (folder / "results.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(x["item"], x["key"], x["status"], x["effect"]) for x in rows] == [
        ("2", "INV-1", "done", "CONFIRMED"),
        ("3", "INV-2", "done", "CONFIRMED"),
        ("4", "INV-3", "done", "CONFIRMED"),
    ]
    assert "[2/3] line 3 INV-2: done" in r.err  # one line per item
    assert "3 items: 3 done" in r.out
    for x in lines:
        assert json.loads((tmp_path / x["run_dir"] / "state.json").read_text())["state"] == "COMPLETED"
        # written behind the batch for the first two (runtime/batch/reports.py), all there when it returns
        assert json.loads((tmp_path / x["run_dir"] / "report.json").read_text())["state"] == "COMPLETED"
        assert (tmp_path / x["run_dir"] / "REPORT.md").stat().st_size > 0
    # each run's bundle snapshot holds the same bytes as the first's: hard-linked, not written and fsync'd again
    inodes = {(tmp_path / x["run_dir"] / "bundle" / "flow.yaml").stat().st_ino for x in lines}
    assert len(inodes) == 1

    sent = _dispatched(tmp_path / "runs")
    r = _batch(flow, items)
    assert r.code == 0, (r.out, r.err)
    again = [json.loads(x) for x in (folder / "results.jsonl").read_text().splitlines()]
    assert [x["status"] for x in again] == ["skipped_done"] * 3
    assert [x["run_dir"] for x in again] == [x["run_dir"] for x in lines]  # the runs that did them
    assert "3 items: 3 skipped_done" in r.out
    assert _dispatched(tmp_path / "runs") == sent and len(_rows(tmp_path)) == 3  # nothing sent
    assert sorted(p.name for p in folder.iterdir() if p.is_dir()) == ["001-INV-1", "002-INV-2", "003-INV-3"]


def test_a_halted_item_stops_the_batch_and_the_rest_are_not_run(flow, tmp_path, monkeypatch):
    run_env(tmp_path, monkeypatch)
    first = tmp_path / "first.csv"
    first.write_text("invoice,vendor,amount\nINV-1,ACME Corp,1250.50\n")
    assert _batch(flow, first).code == 0
    items = tmp_path / "items.csv"
    items.write_text(
        "invoice,vendor,amount\nINV-1,ACME Corp,1250.50\nINV-2,ACME Corp,1250.50\nINV-3,ACME Corp,1250.50\n"
    )
    r = _batch(flow, items, "twin", "--out", str(tmp_path / "out" / "res.jsonl"))  # two identical Save buttons
    assert r.code == 1, (r.out, r.err)
    res = [json.loads(x) for x in (tmp_path / "out" / "res.jsonl").read_text().splitlines()]
    assert [x["status"] for x in res] == ["skipped_done", "halted", "not_run"]
    assert res[1]["reason"].startswith("ambiguous:") and res[1]["effect"] is None
    assert res[2]["run_dir"] is None and "no reset is given" in res[2]["reason"]
    assert (tmp_path / "out" / "res.csv").is_file()
    assert not (tmp_path / "runs" / "batch-items" / "003-INV-3").exists()
    assert _rows(tmp_path) == [("ACME Corp", 1250.5)]  # INV-1's, once
    assert "1 halted, 1 not_run, 1 skipped_done" in r.out


def test_a_durable_batch_whose_item_pauses_exits_3(flow, tmp_path, monkeypatch):
    run_env(tmp_path, monkeypatch)
    items = tmp_path / "items.jsonl"
    items.write_text('{"invoice": "INV-9", "vendor": "ACME Corp", "amount": 1250.50}\n')
    r = _batch(flow, items, "twin", "--durable", "--json")
    assert r.code == 3, (r.out, r.err)
    events = [json.loads(x) for x in r.out.splitlines()]
    assert events[0]["event"] == "item" and events[0]["status"] == "paused"
    assert "flow status runs/batch-items/001-INV-9" in events[0]["reason"]
    assert events[-1] == {
        "event": "summary",
        "counts": {
            **dict.fromkeys(["done", "halted", "failed_after_effect", "uncertain", "not_run", "skipped_done"], 0),
            "paused": 1,
        },
        "results": "runs/batch-items/results.jsonl",
        "csv": "runs/batch-items/results.csv",
        "exit_code": 3,
    }
    r = _batch(flow, items, "twin", "--durable")  # still waiting for its decision: reported, not sent again
    assert r.code == 3 and "waits for a decision" in r.err and _dispatched(tmp_path / "runs") == 3


@pytest.mark.parametrize(
    ("text", "key", "expected"),
    [
        ("", None, ["{p}:1: the items file is empty: no header and no items"]),
        ("vendor,amount,colour\nACME,1,red\n", None, ["{p}:1: unknown column 'colour'"]),
        ("vendor\nACME\n", None, ["{p}:1: no column for the required param 'amount'"]),
        ("vendor,amount\nACME,1\n", "invoice", ["{p}:1: the --key column 'invoice' is absent"]),
        ("invoice,vendor,amount\nA,ACME,1\nA,Globex,2\n", "invoice", ["{p}:3: duplicate key 'A' (first at line 2)"]),
        ('vendor,amount\nACME,1\n"Globex,2\n', None, ["{p}:3: malformed CSV line"]),
        (
            "vendor,amount\nACME,1,2\nGlobex,x\n",
            None,
            ["{p}:2: malformed CSV line", "{p}:3: param amount: 'x' is not a valid number"],
        ),
    ],
)
def test_bad_items_exit_2_with_one_line_each_and_nothing_sent(flow, tmp_path, monkeypatch, text, key, expected):
    run_env(tmp_path, monkeypatch)
    items = tmp_path / "items.csv"
    items.write_text(text)
    r = flow(
        "batch",
        str(BUNDLE),
        "--items",
        str(items),
        "--url",
        f"fixture:{FIXTURES / 'normal'}",
        *(["--key", key] if key else []),
    )
    assert r.code == 2, (r.out, r.err)
    lines = r.err.strip().splitlines()
    assert len(lines) == len(expected), lines
    for line, want in zip(lines, expected):
        assert line.startswith("error: " + want.format(p=items)), (line, want)
    assert not (tmp_path / "runs").exists() and _rows(tmp_path) == []  # nothing started, nothing sent
    assert "Traceback" not in r.err


def test_help_has_an_example_and_the_exit_codes(flow):
    r = flow("batch", "--help")
    assert r.code == 0
    text = " ".join(r.out.split())
    assert "Example: flow batch bundles/post-invoice --items invoices.csv" in text
    assert "Exit codes: 0 every item done; 1 any item halted" in text and "3 any paused and none failed" in text


def test_a_batch_on_a_pseudo_terminal_shows_a_bar_of_items_and_each_items_line(tmp_path):
    import re
    import sys

    from tests.support.cli import flow_env
    from tests.support.tty import run_on_tty

    items = tmp_path / "invoices.csv"
    items.write_text(ITEMS)
    db = tmp_path / "sor.db"
    env = flow_env(tmp_path, FLOW_FIXTURE_DB=str(db), DEMO_DB_DSN=f"sqlite:///{db}")
    code, shown, out = run_on_tty(
        [
            sys.executable,
            "-m",
            "openadapt_flow",
            "batch",
            str(BUNDLE),
            "--items",
            str(items),
            "--key",
            "invoice",
            "--url",
            f"fixture:{FIXTURES / 'normal'}",
        ],
        tmp_path,
        env,
    )
    assert code == 0, shown + out
    assert "\x1b[" in shown and "━" in shown and re.search(r"\x1b\[\d+m[0-3]/3\x1b", shown), shown  # the bar, M/N
    assert "line 4 INV-3: done" in shown and "3 items: 3 done" in out
