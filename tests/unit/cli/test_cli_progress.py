"""Progress: plain lines when stderr is not a terminal, a rich live bar on a pseudo-TTY; rich stays off the start-up
path of a script's command."""

import io
import os
import re
import select
import subprocess
import sys

import pytest

from openadapt_flow.cli.progress import ConsoleProgress, PlainProgress, waiting
from tests.support.cli import REPO
from tests.support.tty import run_on_tty

pytestmark = pytest.mark.timeout(60)

OK = {"ok": True, "rung": "template", "score": 0.987, "ms": 12.0}
HALT = {"ok": False, "category": "ambiguous", "message": "two look-alikes"}


def drive(progress):
    progress.step_started(0, 2, "open", "open the form")
    progress.step_finished(0, 2, "open", OK)
    progress.step_started(1, 2, "save", None)
    progress.step_finished(1, 2, "save", HALT)


def test_plain_lines_when_not_a_terminal():
    out = io.StringIO()
    with ConsoleProgress(out) as progress:
        assert isinstance(progress.renderer, PlainProgress)
        drive(progress)
    assert out.getvalue().splitlines() == [
        "[1/2] open — open the form",
        "    ok  rung=template score=0.987 12 ms",
        "[2/2] save",
        "    HALT save: ambiguous: two look-alikes",
    ]


def read_all(fd):
    chunks = []
    while select.select([fd], [], [], 0.5)[0]:
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks).decode("utf-8", "replace")


def test_a_live_bar_on_a_pseudo_terminal():
    master, slave = os.openpty()
    try:
        with open(slave, "w", encoding="utf-8", closefd=False) as tty:
            with ConsoleProgress(tty) as progress:
                assert type(progress.renderer).__name__ == "LiveProgress"
                drive(progress)
            tty.flush()
        shown = read_all(master)
    finally:
        os.close(slave)
        os.close(master)
    assert "\x1b[" in shown  # drawn with terminal control sequences, not plain lines
    assert "open the form" in shown and "rung=template" in shown and "HALT save: ambiguous" in shown
    assert "1/2" in shown  # the bar's done/total


def test_waiting_is_silent_without_a_terminal_and_keeps_lines(capsys):
    with waiting("waiting for a run", lines=sys.stdout) as display:
        display.line("runs/a\tCOMPLETED\t")
    captured = capsys.readouterr()
    assert captured.out == "runs/a\tCOMPLETED\t\n" and "waiting for a run" not in captured.err


@pytest.mark.parametrize("module", ["durable", "inspect", "replay"])
def test_rich_is_not_imported_by_a_scripted_command(module):
    code = f"import sys, openadapt_flow.cli.app, openadapt_flow.cli.{module}; print('rich' in sys.modules)"
    r = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert r.stdout.strip() == "False", r.stderr


def test_a_replay_on_a_pseudo_terminal_shows_the_live_bar(tmp_path):
    """`flow demo` (a real replay over RFB of the bundled fixture) with its stderr on a pseudo-TTY."""
    from tests.support.cli import flow_env

    code, shown, out = run_on_tty(
        [sys.executable, "-m", "openadapt_flow", "demo", "--no-loop", "--run-dir", str(tmp_path / "run")],
        tmp_path,
        flow_env(tmp_path),
    )
    assert code == 0, shown + out
    assert "\x1b[" in shown and "rung=" in shown, shown
    assert re.search(r"\d+/\d+", shown)  # the bar's done/total
