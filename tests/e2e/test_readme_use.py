"""The README's "Use" block, run as pasted (issue 25, item 8): every command of it in one shell, in a folder laid out
like the checkout, against the recorded demo app served over RFB; each line exits as the README says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.doc_blocks import fenced, run_block, section
from tests.e2e.test_readme_quickstart import checkout_like
from tests.support.cli import REPO, flow_env

pytestmark = pytest.mark.timeout(300)


def test_the_readme_use_block_runs_as_pasted(tmp_path):
    blocks = fenced(section((REPO / "README.md").read_text(), "## Use"), "sh")
    work = checkout_like(tmp_path)
    env = flow_env(work)
    env.pop("VIRTUAL_ENV", None)
    env.pop("DEMO_DB_DSN", None)
    before = {p.name for p in work.iterdir()} | {
        Path(v).name for v in env.values() if Path(v).parent == work
    }  # the test's keys
    lines, output = run_block(blocks[0], work, env, timeout=280)
    wrong = [
        f"{line.command!r}: exit {line.actual}, the README says {line.expected}"
        for line in lines
        if line.actual != line.expected
    ]
    assert not wrong, "\n".join(wrong) + "\n" + output[-4000:]
    assert "Traceback" not in output and "error: internal error" not in output  # (`--help` lists exit code 70)
    assert json.loads((work / "runs/use/report.json").read_text())["state"] == "COMPLETED"
    # the block leaves nothing in the checkout but the runs it made (issue 37: serve.jsonl was left behind)
    assert not (work / "serve.jsonl").exists()
    assert not [p.name for p in work.iterdir() if p.is_file() and p.name not in before], sorted(
        p.name for p in work.iterdir()
    )
    batch = [json.loads(x) for x in (work / "runs/batch-invoices/results.jsonl").read_text().splitlines()]
    assert [(x["key"], x["status"]) for x in batch] == [
        ("INV-1001", "done"),
        ("INV-1002", "done"),
        ("INV-1003", "done"),
    ]
