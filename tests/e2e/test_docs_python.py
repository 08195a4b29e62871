"""docs/python.md's examples run as written: each `python` block saved under the file name on its first line, the
`sh` blocks run in order in one shell from a folder laid out like the checkout, each exit code as the doc says, and
what the prose around them promises (a tool ran once, a write landed once, what `wait` printed)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.e2e.doc_blocks import fenced, run_block
from tests.support.cli import REPO, flow_env

pytestmark = pytest.mark.timeout(300)

DOC = REPO / "docs" / "python.md"


def test_every_example_of_the_python_doc_runs_as_written(tmp_path):
    text = DOC.read_text()
    work = tmp_path / "checkout"
    work.mkdir()
    for name in ("fixtures", "openadapt_flow"):
        os.symlink(REPO / name, work / name)
    files = [b for b in fenced(text, "python") if b.startswith("# file: ")]
    assert len(files) == len(fenced(text, "python")) - 1  # every block but the import line is a file that runs
    for block in files:
        name = block.splitlines()[0].removeprefix("# file: ").strip()
        (work / name).write_text(block)
    shell = "\n".join([f". {Path(sys.prefix) / 'bin' / 'activate'}", *fenced(text, "sh")])
    env = flow_env(work, FLOW_DECISION_KEY_FILE=str(tmp_path / "decision.key"))
    lines, output = run_block(shell, work, env, timeout=280)
    wrong = [
        f"{line.command!r}: exit {line.actual}, the doc says {line.expected}"
        for line in lines
        if line.actual != line.expected
    ]
    assert not wrong, "\n".join(wrong) + "\n" + output[-4000:]
    assert "Traceback" not in output
    assert (work / "fetches.log").read_text() == "Q3\n"
    assert (work / "posted.log").read_text() == "ops-2026 1250.5\n"
    stdout = output.split("--- stderr ---")[0]
    for printed in (
        "COMPLETED 0 posted\n",
        "COMPLETED 0 posted 1250.5 to ops-2026\n",
        "COMPLETED 0 {'file': 'exported Q4', 'to': 'archive'}\n",
    ):
        assert printed in stdout, stdout
    child = work / "runs/q3/children/replay-bundle"
    assert json.loads((child / "report.json").read_text())["state"] == "COMPLETED"
