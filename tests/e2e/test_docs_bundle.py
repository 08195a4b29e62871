"""docs/bundle.md's first section runs as written: the hand-written bundle validates and replays on the recorded demo
app with the values its command gives, the row lands, and its identity gate is what stops a wrong record."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from pathlib import Path

import pytest

from tests.e2e.doc_blocks import fenced, run_block, section, write_files
from tests.support.cli import REPO, flow_env, run_flow

pytestmark = pytest.mark.timeout(120)

DOC = REPO / "docs" / "bundle.md"
FIRST = "## A minimal bundle, written by hand"


def checkout(tmp_path: Path) -> tuple[Path, Path]:
    """A folder laid out like the checkout with the doc's bundle written in it; (folder, bundle)."""
    work = tmp_path / "checkout"
    work.mkdir()
    os.symlink(REPO / "openadapt_flow", work / "openadapt_flow")
    (written,) = write_files(section(DOC.read_text(), FIRST), "yaml", work)
    return work, written.parent


def rows(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT vendor, amount FROM invoices").fetchall()


def test_the_hand_written_bundle_validates_and_replays_as_the_doc_says(tmp_path):
    work, bundle = checkout(tmp_path)
    assert bundle.name == "hello-invoice" and not (bundle / "templates").exists()  # no template: found by its words
    (shell,) = fenced(section(DOC.read_text(), FIRST), "sh")
    lines, output = run_block(f". {Path(sys.prefix) / 'bin' / 'activate'}\n{shell}", work, flow_env(work), timeout=100)
    wrong = [f"{line.command!r}: exit {line.actual}" for line in lines if line.actual != line.expected]
    assert not wrong, "\n".join(wrong) + "\n" + output[-3000:]
    assert "COMPLETED" in output and output.count("ok  rung=ocr") == 4, output
    assert rows(work / "inv.db") == [("Globex Ltd", 99.5)]
    run = next((work / "runs").iterdir())
    save = next(s for s in json.loads((run / "report.json").read_text())["steps"] if s["id"] == "save")
    assert [c["kind"] for c in save["checks"]][0] == "identity" and save["checks"][0]["ok"]
    assert save["effect"]["verdict"] == "CONFIRMED"


def test_its_identity_gate_halts_before_save_when_the_form_holds_another_vendor(tmp_path):
    work, bundle = checkout(tmp_path)
    doc = bundle / "flow.yaml"
    doc.write_text(doc.read_text().replace('identity: {text: "{vendor}"', 'identity: {text: "Initech"'))
    env = flow_env(work, FLOW_FIXTURE_DB=str(work / "inv.db"), INVOICES_DSN=f"sqlite:///{work / 'inv.db'}")
    r = run_flow(
        [
            "replay",
            str(bundle),
            "--url",
            "fixture:openadapt_flow/demo/fixtures/normal",
            "--run-dir",
            "run",
            "--param",
            "vendor=Globex Ltd",
            "--param",
            "amount=99.5",
        ],
        work,
        env=env,
    )
    assert r.returncode == 1, r.stdout + r.stderr
    assert "HALT save: identity: identity gate of step 'save': expected text not read" in r.stdout + r.stderr
    assert not (work / "inv.db").exists() or rows(work / "inv.db") == []  # Save was never clicked
