"""CI smoke (`make smoke`): the shipped demo fixtures served over real RFB on loopback, the demo bundle
replayed through the `vnc` backend by `flow replay`, verified in the fixture's system of record.
Needs Tesseract (the bundle checks text) but no X server and no Xvnc."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openadapt_flow.backends.fixture import SOR_ENV
from tests.support.cli import flow_env, run_flow
from tests.support.demo_invoices import BUNDLE, FIXTURES, PARAMS, invoice_rows
from tests.support.fixtures import Served

pytestmark = pytest.mark.timeout(120)


def replay(tmp_path: Path, url: str, db: Path, **env: str) -> tuple[dict, dict]:
    run_dir = tmp_path / "run"
    r = run_flow(
        ["replay", str(BUNDLE), "--url", url, "--run-dir", str(run_dir), "--json", *PARAMS],
        tmp_path,
        env=flow_env(tmp_path, DEMO_DB_DSN=f"sqlite:///{db}", **env),
    )
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == 0, r.stdout + r.stderr
    assert (run_dir / "REPORT.md").is_file() and (run_dir / "report.html").is_file()
    return json.loads(r.stdout), json.loads((run_dir / "report.json").read_text())


def test_demo_bundle_over_rfb_against_the_recorded_fixture(tmp_path):
    db = tmp_path / "sor.db"
    with Served(FIXTURES / "normal", tmp_path, "--db", str(db)) as served:
        out, rep = replay(tmp_path, served.url, db)
    assert out["state"] == "COMPLETED"
    assert [s["status"] for s in rep["steps"]] == ["verified"] * 5
    assert all(s["rung"] == "template" for s in rep["steps"]), [s["rung"] for s in rep["steps"]]
    save = next(s for s in rep["steps"] if s["id"] == "save")
    assert save["effect"]["verdict"] == "CONFIRMED"
    assert any(c["kind"] == "identity" and c["ok"] for c in save["checks"])  # OCR read the drawn vendor
    assert invoice_rows(db) == [("ACME Corp", 1250.5)]  # the fixture's system-of-record change
    assert "inserted row 1 into invoices" in served.stderr
    assert "unmatched" not in served.stderr  # every input the bundle sent was one the recording knew


def test_drifted_dark_fixture_passes_through_a_lower_rung(tmp_path):
    db = tmp_path / "sor.db"
    with Served(FIXTURES / "dark", tmp_path, "--db", str(db)) as served:
        out, rep = replay(tmp_path, served.url, db)
    rungs = [s["rung"] for s in rep["steps"]]
    assert any(r in ("template-edges", "ocr") for r in rungs), rungs
    assert invoice_rows(db) == [("ACME Corp", 1250.5)]


def test_the_same_fixture_in_process_through_the_fixture_backend(tmp_path):
    db = tmp_path / "sor.db"
    out, rep = replay(tmp_path, f"fixture:{FIXTURES / 'normal'}", db, **{SOR_ENV: str(db)})
    assert [s["status"] for s in rep["steps"]] == ["verified"] * 5
    assert invoice_rows(db) == [("ACME Corp", 1250.5)]
