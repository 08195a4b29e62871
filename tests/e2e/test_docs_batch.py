"""docs/batch.md's batch on the demo app, as pasted: the shell block run line by line in one shell from a folder laid
out like the checkout, each exit code as the doc says; then what the prose promises — three invoices done, the same
batch again sending nothing, a fourth sent alone, a halt on the twin app stopping the batch, one row per done invoice."""

from __future__ import annotations

import csv
import json

import pytest

from tests.e2e.doc_blocks import fenced, run_block, section
from tests.e2e.test_readme_quickstart import checkout_like
from tests.support.cli import REPO, flow_env
from tests.support.demo_invoices import invoice_rows

pytestmark = pytest.mark.timeout(300)


def test_the_batch_tutorial_runs_as_pasted(tmp_path):
    blocks = fenced(section((REPO / "docs" / "batch.md").read_text(), "## A batch on the demo app"), "sh")
    assert len(blocks) == 1
    work = checkout_like(tmp_path)
    env = flow_env(work)
    env.pop("VIRTUAL_ENV", None)
    lines, output = run_block(blocks[0], work, env, timeout=280)
    wrong = [
        f"{line.command!r}: exit {line.actual}, the doc says {line.expected}"
        for line in lines
        if line.actual != line.expected
    ]
    assert not wrong, "\n".join(wrong) + "\n" + output[-4000:]
    assert "Traceback" not in output
    assert output.count("batch: 3 items: 3 done") == 1 and "batch: 3 items: 3 skipped_done" in output
    assert "batch: 4 items: 1 done, 3 skipped_done" in output
    with (work / "runs/batch-invoices/results.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["key"], r["status"]) for r in rows] == [
        ("INV-1", "skipped_done"),
        ("INV-2", "skipped_done"),
        ("INV-3", "skipped_done"),
        ("INV-4", "done"),
    ]
    more = [json.loads(x) for x in (work / "runs/batch-more/results.jsonl").read_text().splitlines()]
    assert [x["status"] for x in more] == ["halted", "not_run"] and more[0]["reason"].startswith("ambiguous:")
    assert invoice_rows(work / "batch.db") == [("ACME", 12.5), ("Globex", 99.0), ("Initech", 7.25), ("Umbrella", 3.75)]
    assert "[('ACME', 12.5), ('Globex', 99.0), ('Initech', 7.25), ('Umbrella', 3.75)]" in output
