"""The README's quick start, run as a newcomer runs it: every command of its block in one shell, in a folder laid
out like the checkout (its fixtures/ and openadapt_flow/, the repo's venv as .venv), each exit code as the README
says. Commands that need a desktop use the recorded fixtures, so no X is needed."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.e2e.doc_blocks import fenced, run_block, section
from tests.support.cli import REPO, flow_env

pytestmark = pytest.mark.timeout(300)


def checkout_like(tmp_path: Path) -> Path:
    work = tmp_path / "checkout"
    work.mkdir()
    for name in ("fixtures", "openadapt_flow"):
        os.symlink(REPO / name, work / name)
    os.symlink(sys.prefix, work / ".venv")  # the venv the suite runs in (make test: the repo's .venv)
    return work


def test_the_readme_quick_start_runs_as_written(tmp_path):
    readme = (REPO / "README.md").read_text()
    blocks = fenced(section(readme, "## Quick start"), "sh")
    assert len(blocks) == 1
    work = checkout_like(tmp_path)
    env = flow_env(work, FLOW_DECISION_KEY_FILE=str(tmp_path / "decision.key"))
    env.pop("VIRTUAL_ENV", None)
    lines, output = run_block(blocks[0], work, env, timeout=280)
    assert [line.command.split()[:2] for line in lines][:2] == [[".", ".venv/bin/activate"], ["flow", "demo"]]
    wrong = [
        f"{line.command!r}: exit {line.actual}, the README says {line.expected}"
        for line in lines
        if line.actual != line.expected
    ]
    assert not wrong, "\n".join(wrong) + "\n" + output[-4000:]
    assert "Traceback" not in output and "internal error" not in output
    # what the comments promise
    assert json.loads((work / "runs/dark/report.json").read_text())["state"] == "COMPLETED"
    twin = json.loads((work / "runs/twin/report.json").read_text())
    assert twin["state"] == "BLOCKED" and twin["incident"]["operator"] == "alice"
    assert "1   ACME Corp   1250.5" in output  # `flow demo` ended its loop on the row the resumed run wrote
