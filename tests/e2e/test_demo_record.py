"""`flow demo --record` end to end, as a newcomer runs it: the command starts its own Xvnc and the demo app, prints
the viewer commands; a scripted viewer (our VncBackend on the printed port) does the task the command asks for;
Ctrl+C; the command compiles the recording and replays it with new values, which land in the app's database."""

from __future__ import annotations

import ast
import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.test_record import drive
from tests.support.cli import flow_env, run_flow

pytestmark = pytest.mark.timeout(240)


def start_tutorial(tmp_path: Path, *args: str) -> tuple[subprocess.Popen, list[str]]:
    """`flow demo --record ARGS` running; its stdout lines up to the recorder's "listening" line."""
    cmd = [sys.executable, "-m", "openadapt_flow", "demo", "--record", *args]
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=flow_env(tmp_path), stdout=subprocess.PIPE,
                            stderr=(tmp_path / "stderr.txt").open("w"), text=True)
    assert proc.stdout is not None
    lines: list[str] = []
    while not any("connect your VNC viewer to" in line for line in lines):
        line = proc.stdout.readline()
        assert line, "".join(lines) + (tmp_path / "stderr.txt").read_text()
        lines.append(line)
    return proc, lines


def finish(proc: subprocess.Popen) -> str:
    """Ctrl+C, as the tutorial says; the rest of stdout once the command has compiled, replayed and exited."""
    try:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=180)
        return out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


def test_the_recording_tutorial_records_compiles_and_replays_with_new_values(tmp_path):
    proc, head = start_tutorial(tmp_path, "--out", "mine", "--run-dir", "run", "--param", "vendor=Initech")
    text = "".join(head)
    port = int(re.search(r"on this machine:\s+vncviewer localhost:(\d+)", text).group(1))
    assert re.search(rf"ssh -N -L {port}:localhost:{port} \S+@\S+", text), text
    assert "click \"Save\"" in text
    drive(port)  # the user, in their viewer
    out = finish(proc)
    log = (tmp_path / "stderr.txt").read_text()
    assert proc.returncode == 0, out + log
    assert "Traceback" not in log + out
    assert "wrote mine/flow.yaml: 5 steps" in out and "params vendor, amount" in out
    assert "with new values (vendor=Initech, amount=99.50)" in out
    rows = ast.literal_eval(re.search(r"the app's database now holds (\[.*\])", out).group(1))
    assert [r[1:] for r in rows] == [("ACME Corp", 1250.5), ("Initech", 99.5)]  # the user's row, then the replay's
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    effects = [s["effect"]["verdict"] for s in report["steps"] if s.get("effect")]
    assert effects == ["CONFIRMED"]  # the replay's row was checked in the database, not only on the screen
    assert "== What next ==" in out and "flow replay mine --url vnc://HOST:PORT --param vendor=… --param amount=… --durable" in out
    # what it wrote is an ordinary bundle
    assert run_flow(["validate", str(tmp_path / "mine")], tmp_path).returncode == 0


def test_stopping_before_any_input_says_what_was_missing(tmp_path):
    proc, _ = start_tutorial(tmp_path, "--out", "mine")
    out = finish(proc)
    err = (tmp_path / "stderr.txt").read_text()
    assert proc.returncode == 2, out + err
    assert "nothing was recorded: no viewer input reached the recorder on port" in err
    assert "Traceback" not in err and not (tmp_path / "mine").exists()


def test_record_only_options_without_record_are_refused(tmp_path):
    r = run_flow(["demo", "--out", "x"], tmp_path)
    assert r.returncode == 2 and "belong to flow demo --record" in r.stderr
    r = run_flow(["demo", "--record", "--live"], tmp_path)
    assert r.returncode == 2 and "--record runs the live app" in r.stderr
