"""Plain words first, the codes beside them (issue 37, item 5): `flow status`, `flow runs`, the report and the
console say "waiting for a decision: two "New invoice" look the same; nothing was written" before
`PAUSED awaiting_approval · ambiguous · HALTED_BEFORE_EFFECT`; the console names its store by its path, not a
Python repr; `flow demo` ends pointing to the recording tutorial and says how to get the console (item 6).

Real runs: the demo bundle on its recorded fixture with a look-alike "New invoice" button, paused ambiguous at its
first step before any input (tests/unit/report/report_runs.py)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from openadapt_flow.cli.console import store_where
from openadapt_flow.cli.demo import what_next
from openadapt_flow.console.views import run_row
from openadapt_flow.report.meanings import codes, headline
from openadapt_flow.runtime import open_ref
from openadapt_flow.store.fs.store import FilesystemStore
from tests.support.cli import flow_env, run_flow
from tests.support.xserver import free_port
from tests.unit.report.report_runs import ambiguous_run, run_env

pytestmark = pytest.mark.timeout(120)
WORDS = 'waiting for a decision: two "New invoice" look the same; nothing was written'
CODES = "PAUSED awaiting_approval · ambiguous · HALTED_BEFORE_EFFECT"


@pytest.fixture
def paused(tmp_path, monkeypatch) -> Path:
    run_env(tmp_path, monkeypatch)
    return Path(ambiguous_run(tmp_path).run_dir)


def test_headline_words_for_the_usual_stops():
    assert (
        headline("PAUSED", "awaiting_approval", "ambiguous", 'target "Save" is ambiguous (…)', "HALTED_BEFORE_EFFECT")
        == 'waiting for a decision: two "Save" look the same; nothing was written'
    )
    assert (
        headline("PAUSED", "awaiting_approval", "effect", "x", "RECONCILIATION_REQUIRED")
        == "waiting for a decision: the system of record did not show the step's change; a write may have landed: "
        "check it before going on"
    )
    assert headline("COMPLETED") == "finished"
    assert headline("PAUSED", "awaiting_user") == "waiting for an answer"
    assert headline("FAILED", None, "some_new_category", "m") == "failed"  # an unknown code is not made up into words
    assert codes("PAUSED", "awaiting_approval", "ambiguous", "HALTED_BEFORE_EFFECT") == CODES


def test_status_puts_the_plain_words_first(flow, paused):
    r = flow("status", str(paused))
    assert r.code == 0, r.err
    assert r.out.splitlines()[0] == f"{WORDS}  [{CODES}]", r.out
    assert "state: PAUSED (awaiting_approval)" in r.out  # the codes stay, below


def test_runs_has_a_header_row_and_says_each_run_in_words(flow, paused):
    r = flow("runs", str(paused.parent))
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0].split("\t") == ["RUN", "STATE", "BUNDLE", "TRANSACTION_OUTCOME", "UPDATED", "WHAT"], r.out
    row = next(line.split("\t") for line in lines[1:] if line.startswith(str(paused)))
    assert row[1] == "PAUSED" and row[-1] == WORDS


def test_the_report_headlines_in_words(paused):
    md = (paused / "REPORT.md").read_text()
    assert md.splitlines()[2] == f"**{WORDS}** ({CODES})", md[:400]
    html = (paused / "report.html").read_text()
    assert re.search(
        r'<p class="headline" id="headline"><b>waiting for a decision: two &quot;New invoice&quot; look '
        r'the same; nothing was written</b>',
        html,
    ), html[:2000]


def test_the_console_headlines_in_words(paused):
    row = run_row(open_ref(str(paused)))
    assert (row["headline"], row["codes"]) == (WORDS, CODES)


def test_the_console_names_its_store_by_its_path(tmp_path):
    assert store_where(FilesystemStore(tmp_path / "runs"), None, Path("runs")) == str((tmp_path / "runs").resolve())
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "openadapt_flow",
            "console",
            "--root",
            str(tmp_path / "runs"),
            "--bind",
            f"127.0.0.1:{port}",
        ],
        cwd=tmp_path,
        env=flow_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # printed before it serves
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert (
        line.strip() == f"flow console on http://127.0.0.1:{port}/, runs in {(tmp_path / 'runs').resolve()}; "
        "Ctrl-C stops it"
    ), line
    assert "Store(" not in line


def test_the_demo_ends_pointing_to_the_recording_tutorial_and_the_console(tmp_path):
    text = "\n".join(what_next())
    assert "make demo-record (or flow demo --record; docs/record.md)" in text
    assert "flow console --root runs" in text and "docs/console.md" in text
    r = run_flow(["demo", "--no-loop"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.rstrip().endswith(text.rstrip()), r.stdout[-600:]  # the demo's last words


def test_a_resume_after_a_reject_says_who_rejected(flow, paused):
    r = flow("approve", str(paused), "--decision", "reject", "--operator", "alice", "--note", "wrong vendor")
    assert r.code == 0, r.err
    r = flow("resume", str(paused))
    assert r.code == 4, r.out + r.err
    assert re.search(
        r"run is already terminal \(BLOCKED: rejected by alice \(OS user \S+\) at \S+, noting: wrong "
        r"vendor\); nothing to do",
        r.out + r.err,
    ), r.out + r.err
    r = flow("status", str(paused))
    assert r.out.splitlines()[0] == "blocked: rejected by alice; nothing was written  [BLOCKED · HALTED_BEFORE_EFFECT]"


def test_status_piped_into_a_reader_that_left_stops_quietly_without_an_error_file(paused):
    # `| true`: the reader is gone before status writes (as `| head -1` is once it has its line)
    cmd = (
        f"{shlex.quote(sys.executable)} -m openadapt_flow status {shlex.quote(str(paused))} | true; "
        'echo "status exit ${PIPESTATUS[0]}" >&2'
    )
    r = subprocess.run(
        ["bash", "-c", cmd], cwd=paused.parent, env=flow_env(paused.parent), capture_output=True, text=True, timeout=60
    )
    assert r.stderr.strip().splitlines() == ["status exit 141"], r.stderr  # as a shell reports SIGPIPE; nothing else
    assert not list(paused.glob("internal-error-*")), sorted(p.name for p in paused.iterdir())
