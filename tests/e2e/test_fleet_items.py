"""`flow submit BUNDLE --items FILE --store postgresql://…` on a real PostgreSQL: one durable run queued per work item,
each key once per bundle — the same file again, a grown file, and two submits at once queue no key twice."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import psycopg
import pytest

from openadapt_flow.bundle.items import read_items
from openadapt_flow.bundle.loader import load_bundle
from openadapt_flow.runtime.fleet.submit import submit_items
from tests.support.cli import flow_env, run_flow
from tests.support.demo_invoices import BUNDLE
from tests.support.pg import PgServer, pg_server, store_spec  # noqa: F401 — pg_server: the session's server

pytestmark = pytest.mark.timeout(180)

ITEMS = "invoice,vendor,amount\nINV-1,ACME,12.50\nINV-2,Globex,99\nINV-3,Initech,7.25\n"


def _submissions(spec: str, password: str) -> list[tuple[str, str, str, str]]:
    with psycopg.connect(spec, autocommit=True, password=password) as c:
        return c.execute(
            "SELECT s.item_scope, s.item_key, r.state, r.manifest FROM flow_submissions s "
            "JOIN flow_runs r ON r.id = s.run ORDER BY s.item_key"
        ).fetchall()


def test_submit_items_queues_each_key_once(
    pg_server: PgServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = store_spec(pg_server, f"i_{tmp_path.name.lower()}", monkeypatch)
    env = flow_env(tmp_path, PGPASSWORD=pg_server.password)
    items = tmp_path / "invoices.csv"
    items.write_text(ITEMS)
    args = ["submit", str(BUNDLE), "--items", str(items), "--key", "invoice", "--store", spec]

    r = run_flow(args + ["--json"], tmp_path, env)
    assert r.returncode == 0, r.stderr
    first = json.loads(r.stdout)
    assert [(x["item"], x["key"], x["queued"], x["state"]) for x in first] == [
        (2, "INV-1", True, "PENDING"),
        (3, "INV-2", True, "PENDING"),
        (4, "INV-3", True, "PENDING"),
    ]
    rows = _submissions(spec, pg_server.password)
    assert [(s, k, st) for s, k, st, _ in rows] == [("demo-invoice", f"INV-{n}", "PENDING") for n in (1, 2, 3)]
    assert [json.loads(m)["params"] for *_, m in rows] == [
        {"vendor": "ACME", "amount": 12.5},
        {"vendor": "Globex", "amount": 99},
        {"vendor": "Initech", "amount": 7.25},
    ]

    r = run_flow(args, tmp_path, env)  # the same file again: nothing queued
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        f"line {n + 1} INV-{n}: not queued: its key is {first[n - 1]['run_id']} (PENDING) already" for n in (1, 2, 3)
    ]
    items.write_text(ITEMS + "INV-4,Umbrella,3\n")  # a grown file: only the new item
    r = run_flow(args + ["--json"], tmp_path, env)
    assert [x["queued"] for x in json.loads(r.stdout)] == [False, False, False, True]
    assert len(_submissions(spec, pg_server.password)) == 4

    items.write_text(ITEMS + "INV-1,Hooli,5\n")  # bad input: one line naming file:line, exit 2, nothing queued
    r = run_flow(args, tmp_path, env)
    assert r.returncode == 2 and r.stderr.strip() == f"error: {items}:5: duplicate key 'INV-1' (first at line 2)"
    assert len(_submissions(spec, pg_server.password)) == 4


def test_two_submits_of_one_file_at_once_queue_each_key_once(
    pg_server: PgServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = store_spec(pg_server, f"i_{tmp_path.name.lower()}", monkeypatch)
    items = tmp_path / "invoices.csv"
    items.write_text("invoice,vendor,amount\n" + "".join(f"INV-{n},Vendor {n},{n}\n" for n in range(1, 21)))
    work = read_items(items, load_bundle(BUNDLE).model, "invoice")
    gate = threading.Barrier(2)
    queued: list[list[bool]] = []

    def submit() -> None:
        gate.wait()
        queued.append([s.queued for s in submit_items(spec, BUNDLE, work, None)])

    threads = [threading.Thread(target=submit) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert len(queued) == 2 and [a or b for a, b in zip(*queued)] == [True] * 20
    assert not any(a and b for a, b in zip(*queued))  # no key queued by both
    keys = [k for _, k, _, _ in _submissions(spec, pg_server.password)]
    assert sorted(keys) == sorted(f"INV-{n}" for n in range(1, 21))
