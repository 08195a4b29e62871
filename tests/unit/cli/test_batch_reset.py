"""`flow batch` runs the bundle's `reset:` (runtime.reset_app) after an item that did not end done, and before every
item with `reset_before_each`; a reset that does not reach the start state stops the batch (spec §22). On the demo
bundle's recorded twin fixture (two identical Save buttons: every item halts as ambiguous, before its write)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.demo_invoices import BUNDLE, FIXTURES
from tests.unit.report.report_runs import run_env

pytestmark = pytest.mark.timeout(180)

ITEMS = "invoice,vendor,amount\nINV-1,ACME Corp,1250.50\nINV-2,ACME Corp,1250.50\nINV-3,ACME Corp,1250.50\n"
LIST = {"text_present": "Invoices", "region": [44, 33, 134, 23]}


def _bundle(tmp_path: Path, **over: object) -> Path:
    root = tmp_path / "bundle"
    shutil.copytree(BUNDLE, root)
    doc = yaml.safe_load((root / "flow.yaml").read_text())
    doc.update({"start": [LIST], **over})
    (root / "flow.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return root


def _restart(log: Path, code: int = 0) -> dict[str, object]:
    """A restart command that notes each time it ran (the fixture comes back at its list on the next connection)."""
    script = f"import sys; open({str(log)!r}, 'a').write('x'); sys.exit({code})"
    return {"command": [sys.executable, "-c", script], "wait_for": LIST, "timeout_s": 20}


def _results(tmp_path: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in (tmp_path / "res.jsonl").read_text().splitlines()]


def _batch(flow, root: Path, tmp_path: Path):
    items = tmp_path / "items.csv"
    items.write_text(ITEMS)
    return flow(
        "batch",
        str(root),
        "--items",
        str(items),
        "--key",
        "invoice",
        "--url",
        f"fixture:{FIXTURES / 'twin'}",
        "--out",
        str(tmp_path / "res.jsonl"),
    )


def test_a_reset_after_each_halted_item_lets_the_batch_go_on(flow, tmp_path, monkeypatch):
    run_env(tmp_path, monkeypatch)
    log = tmp_path / "restarts"
    r = _batch(flow, _bundle(tmp_path, reset=_restart(log)), tmp_path)
    assert r.code == 1, (r.out, r.err)
    assert [x["status"] for x in _results(tmp_path)] == ["halted", "halted", "halted"]  # every item sent, none not_run
    assert log.read_text() == "xx"  # before items 2 and 3: each followed a halted item


def test_reset_before_each_item_and_a_reset_that_fails_stops_the_batch(flow, tmp_path, monkeypatch):
    run_env(tmp_path, monkeypatch)
    log = tmp_path / "restarts"
    r = _batch(flow, _bundle(tmp_path, reset=_restart(log, code=3), reset_before_each=True), tmp_path)
    assert r.code == 1, (r.out, r.err)
    res = _results(tmp_path)
    assert [x["status"] for x in res] == ["not_run"] * 3 and log.read_text() == "x"
    assert "the reset did not bring the app back to its start state: reset command exited 3" in str(res[0]["reason"])
