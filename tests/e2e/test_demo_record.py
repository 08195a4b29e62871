"""`flow demo --record` end to end, as a newcomer runs it: the command starts its own Xvnc and the demo app and
prints the viewer commands; on the "laptop" (a second Xvnc) the printed `vncviewer` command opens TigerVNC's
viewer, and a scripted person clicks and types in that viewer window through X (pyautogui, xdotool) the task the
command asks for; Ctrl+C; the command compiles the recording and replays it with new values, which land in the
app's database."""

from __future__ import annotations

import ast
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from openadapt_flow.backends.screen import ScreenBackend
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.procs import stop_process
from openadapt_flow.runtime.act.settle import settle
from tests.support.cli import flow_env, run_flow
from tests.support.xserver import XvncServer, start_xvnc, wait_until

pytestmark = pytest.mark.timeout(240)

# the task the tutorial prints, at the demo app's widgets (remote desktop pixels): New invoice, Vendor, Amount, Save, Back
TASK = [(130, 112, ""), (200, 130, "ACME Corp"), (200, 200, "1250.50"), (230, 282, ""), (100, 182, "")]


def viewer_window(laptop: XvncServer) -> tuple[str, int, int]:
    """The viewer's 1024x768 desktop window on the laptop's screen, once mapped: (id, x, y)."""

    def find() -> tuple[str, int, int] | None:
        found = subprocess.run(
            ["xdotool", "search", "--onlyvisible", "--name", "."],
            env=laptop.env,
            capture_output=True,
            text=True,
            timeout=10,
        )
        for wid in found.stdout.split():
            geo = subprocess.run(
                ["xdotool", "getwindowgeometry", "--shell", wid],
                env=laptop.env,
                capture_output=True,
                text=True,
                timeout=10,
            )
            g = dict(line.split("=", 1) for line in geo.stdout.split())
            if (g.get("WIDTH"), g.get("HEIGHT")) == ("1024", "768"):
                return wid, int(g["X"]), int(g["Y"])
        return None

    return wait_until(find, 20, "TigerVNC's viewer window on the laptop's screen")


def demonstrate(laptop: XvncServer, command: str, tmp_path: Path) -> None:
    """The user: runs the printed viewer command on the laptop and does the task in its window."""
    viewer = subprocess.Popen(
        command.split(), env=laptop.env, stdout=(tmp_path / "viewer.log").open("w"), stderr=subprocess.STDOUT
    )
    try:
        wid, ox, oy = viewer_window(laptop)
        # no window manager on the laptop: give the viewer the keyboard focus a window manager gives on click
        subprocess.run(["xdotool", "windowfocus", "--sync", wid], env=laptop.env, check=True, timeout=10)
        with ScreenBackend(BackendSpec(kind="screen", display=f":{laptop.display}")) as hands:
            settle(hands, 0.3, 10, expect_change_s=5)  # the viewer has drawn the remote desktop
            for x, y, text in TASK:
                hands.click(ox + x, oy + y)
                if text:
                    settle(hands, 0.3, 10, expect_change_s=2)  # the field has taken the focus
                    hands.type_text(text)
                settle(hands, 0.35, 10, expect_change_s=2)
    finally:
        stop_process(viewer)


@contextmanager
def tutorial(tmp_path: Path, *args: str) -> Iterator[tuple[subprocess.Popen, list[str]]]:
    """`flow demo --record ARGS` running, with its stdout lines up to the recorder's "listening" line. However the
    test ends, the command is ended as a user would (SIGTERM: it stops its own Xvnc and app), killed only if it
    does not exit then. It runs as a terminal runs a foreground command: the leader of its own process group, so
    `finish` can send Ctrl+C to the whole group as the terminal does."""
    cmd = [sys.executable, "-m", "openadapt_flow", "demo", "--record", *args]
    proc = subprocess.Popen(
        cmd,
        cwd=tmp_path,
        env=flow_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=(tmp_path / "stderr.txt").open("w"),
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        lines: list[str] = []
        while not any("connect your VNC viewer to" in line for line in lines):
            line = proc.stdout.readline()
            assert line, "".join(lines) + (tmp_path / "stderr.txt").read_text()
            lines.append(line)
        yield proc, lines
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def finish(proc: subprocess.Popen) -> str:
    """Ctrl+C, as the tutorial says, delivered as a terminal delivers it: SIGINT to every process in the foreground
    process group, not only to flow; the rest of stdout once the command has compiled, replayed and exited."""
    os.killpg(proc.pid, signal.SIGINT)
    out, _ = proc.communicate(timeout=180)
    return out


@pytest.fixture
def laptop(monkeypatch) -> Iterator[XvncServer]:
    """The user's own screen, where the viewer runs (bigger than the remote desktop, as a laptop's is)."""
    server = start_xvnc(1280, 1024)
    monkeypatch.setenv("XAUTHORITY", server.env["XAUTHORITY"])  # python-xlib (pyautogui) reads it when connecting
    try:
        yield server
    finally:
        server.stop()


def test_the_recording_tutorial_records_compiles_and_replays_with_new_values(tmp_path, laptop):
    with tutorial(tmp_path, "--out", "mine", "--run-dir", "run", "--param", "vendor=Initech") as (proc, head):
        text = "".join(head)
        command = re.search(r"on this machine:\s+(vncviewer localhost:(\d+))\n", text)
        assert command, text
        port = int(command.group(2))
        assert re.search(rf"ssh -N -L {port}:localhost:{port} \S+@\S+", text), text
        assert "click \"Save\"" in text
        demonstrate(laptop, command.group(1), tmp_path)
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
    assert (
        "== What next ==" in out
        and "flow replay mine --url vnc://HOST:PORT --param vendor=… --param amount=… --durable" in out
    )
    # what it wrote is an ordinary bundle
    assert run_flow(["validate", str(tmp_path / "mine")], tmp_path).returncode == 0


def test_stopping_before_any_input_says_what_was_missing(tmp_path):
    with tutorial(tmp_path, "--out", "mine") as (proc, _):
        out = finish(proc)
    err = (tmp_path / "stderr.txt").read_text()
    assert proc.returncode == 2, out + err
    assert "nothing was recorded: no viewer input reached the recorder on port" in err
    assert "Traceback" not in err and not (tmp_path / "mine").exists()


def test_a_hang_up_stops_the_desktop_it_started(tmp_path):
    # the user's SSH session drops while recording: the Xvnc and the app go with the command, not left behind
    with tutorial(tmp_path, "--out", "mine") as (proc, head):
        display = re.search(r"private desktop \(Xvnc :(\d+)", "".join(head)).group(1)
        lock = Path(f"/tmp/.X{display}-lock")
        assert lock.exists()
        proc.send_signal(signal.SIGHUP)
        assert proc.wait(timeout=30) == 129
        wait_until(lambda: not lock.exists(), 10, f"Xvnc :{display} to stop")
    assert not (tmp_path / "mine").exists()


def test_bad_options_are_refused_in_one_line_before_anything_starts(tmp_path):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "flow.yaml").write_text("")
    cases = [
        (["--out", "x"], "--out, --viewer-port and --param belong to flow demo --record"),
        (["--record", "--live"], "--record runs the live app and its own steps: drop --live"),
        (["--record", "--param", "vendor"], "--param 'vendor': expected NAME=VALUE"),
        (["--record", "--out", "taken"], "taken exists and is not an empty folder; choose a new --out"),
    ]
    for args, message in cases:
        r = run_flow(["demo", *args], tmp_path)
        assert r.returncode == 2 and message in r.stderr, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and not r.stdout, (args, r.stderr)  # nothing was started
