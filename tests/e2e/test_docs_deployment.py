"""docs/deployment.md's worked durable run, as written: the config block saved, the shell blocks run in order in one
shell from a folder laid out like the checkout, each exit code as the doc says; then what the prose promises — the
run paused before guessing, the operator's teach decision resumed by the worker, one row written, a patch that
applies, a backup that holds the runs and the ledger."""

from __future__ import annotations

import json
import os
import socket
import sys
import tarfile
from pathlib import Path

import pytest

from tests.e2e.doc_blocks import fenced, run_block, section, write_files
from tests.support.cli import REPO, flow_env
from tests.support.demo_invoices import invoice_rows

pytestmark = pytest.mark.timeout(300)

DOC = REPO / "docs" / "deployment.md"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_worked_durable_run_runs_as_written(tmp_path):
    worked = section(DOC.read_text(), "## A worked durable run, end to end")
    assert worked.count("5931") == 2, "the doc's desktop port is named twice: serve and the config's url"
    worked = worked.replace("5931", str(free_port()))  # the doc's port may be another test's Xvnc (display :31)
    work = tmp_path / "checkout"
    work.mkdir()
    for name in ("fixtures", "openadapt_flow"):
        os.symlink(REPO / name, work / name)
    assert [p.relative_to(work).as_posix() for p in write_files(worked, "yaml", work)] == ["runner/deploy.yaml"]
    shell = "\n".join([f". {Path(sys.prefix) / 'bin' / 'activate'}", *fenced(worked, "sh")])
    env = flow_env(work)
    for name in ("FLOW_KEY_FILE", "FLOW_DECISION_KEY_FILE", "FLOW_STATE_DIR"):
        env.pop(name, None)  # the doc sets them
    env["HOME"] = str(tmp_path / "home")  # so a default the doc forgot to override would land here, not in ~
    lines, output = run_block(shell, work, env, timeout=280)
    wrong = [
        f"{line.command!r}: exit {line.actual}, the doc says {line.expected}"
        for line in lines
        if line.actual != line.expected
    ]
    assert not wrong, "\n".join(wrong) + "\n" + output[-4000:]
    assert "Traceback" not in output
    run = work / "runner/runs/inv-1001"
    records = [json.loads(x) for x in (run / "journal.jsonl").read_text().splitlines()]
    assert [r["data"]["category"] for r in records if r["type"] == "escalation_opened"] == ["ambiguous"]
    assert [x["step"] for x in records if x["type"] == "action_dispatched"].count("save") == 1
    rep = json.loads((run / "report.json").read_text())
    assert rep["state"] == "COMPLETED" and [d["decision"] for d in rep["decisions"]] == ["teach"]
    assert rep["decisions"][0]["operator"] == "alice"
    assert invoice_rows(work / "runner/app.db") == [("ACME Corp", 1250.5)]
    assert "taught" in (work / "runner/bundle-v2/flow.yaml").read_text()
    assert sorted(p.name for p in (work / "runner/keys").iterdir()) == ["decision.key", "install.key"]
    assert not (tmp_path / "home").exists()  # every key and the ledger went where the doc put them
    with tarfile.open(work / "runner-backup.tgz") as tar:
        names = tar.getnames()
    assert "runs/inv-1001/journal.jsonl" in names and any(n.startswith("state/") for n in names)
