"""The real-app suite's harness: a person at a VNC viewer, `flow record` around them, replays judged by the system
of record.

A demonstration is driven through the recording proxy exactly as tests/e2e/test_record.py does (the proxy as a
subprocess, our VncBackend as the viewer), but like a person: the pointer travels to each target in several moves,
hovers over the widgets on its way, pauses (waits for the hovered look to settle), and the script makes a correction.
Every replay is judged by the application's system of record (the SQLite file, the saved file, the calculator's
display) and registered in RESULTS, which the conftest prints as the suite's figure.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.backends.vnc import VncBackend
from openadapt_flow.demo.thirdparty import Drift, RunningApp, start_app
from openadapt_flow.runtime.act.settle import settle
from tests.realapps.open_halts import open_halt
from tests.support.cli import flow_env, run_flow

TRAVEL_MOVES = 5  # pointer events per leg of a journey
ECHO_WAIT_S = 1.0
CLICK_QUIET_S = 0.6  # bound on waiting for a typed key to show
SUPPORTED: dict[str, bool] = {}


@dataclass
class Replay:
    """One judged replay: what `flow replay` said and what the system of record shows."""

    app: str
    drift: str
    exit: int
    state: str | None
    outcome: str  # completed | halted | WRONG
    detail: str  # the result read from the system of record, and why it is (not) right
    halt: dict[str, Any] | None = None
    wrong_click: bool = False
    false_success: bool = False
    expectation: str = "complete"  # complete | complete_or_halt
    reason: str = ""  # why a halt is acceptable here
    steps: list[dict[str, Any]] = field(default_factory=list)

    def summary(self) -> str:
        halt = ""
        if self.halt:
            halt = f" at {self.halt.get('step')}: {self.halt.get('category')}: {(self.halt.get('message') or '')[:160]}"
        return f"{self.app} x {self.drift}: {self.outcome} (exit {self.exit}, {self.state}){halt}; {self.detail}"

    def evidence(self) -> str:
        """Each step's status, rung, score and runner-up: what the report says the ladder did."""
        rows = []
        for s in self.steps:
            rows.append(
                f"  {s.get('id')}: {s.get('status')} rung={s.get('rung')} score={s.get('score')} "
                f"runner_up={s.get('runner_up')} point={s.get('point')} {s.get('resolve_ms')}ms"
                + (f" halt={s['halt']}" if s.get("halt") else "")
            )
        return "\n".join(rows)


RESULTS: list[Replay] = []


# -- a person at a viewer ---------------------------------------------------------------------------------------


class Person:
    """A VNC viewer driven like a person: travels, hovers, pauses, clicks, types, corrects."""

    def __init__(self, port: int) -> None:
        self.viewer = VncBackend(BackendSpec(kind="vnc", host="127.0.0.1", port=port, io_timeout_s=15))
        self.pos = (700, 600)
        self.pause()

    def pause(self, quiet_s: float = 0.25) -> None:
        """Wait until the screen is quiet (a hovered look drawn, a click's result shown): a person's glance."""
        settle(self.viewer, quiet_s, 8)

    def _pointer(self, x: int, y: int) -> None:
        # VncBackend has no public pointer motion (the engine only clicks); a viewer sends plain motion events.
        self.viewer._send([("ptr", int(x), int(y), 0)], "pointer motion")
        self.pos = (int(x), int(y))

    def travel(self, x: int, y: int, via: tuple[tuple[int, int], ...] = ()) -> None:
        """Move to (x, y) in several moves, stopping to hover over each of `via` on the way."""
        for wx, wy in [*via, (x, y)]:
            sx, sy = self.pos
            for i in range(1, TRAVEL_MOVES + 1):
                self._pointer(sx + (wx - sx) * i // TRAVEL_MOVES, sy + (wy - sy) * i // TRAVEL_MOVES)
            self.pause()

    def click(self, x: int, y: int, via: tuple[tuple[int, int], ...] = ()) -> None:
        self.travel(x, y, via)
        self.viewer.click(x, y)
        # a person looks until the click's result is there: a selected cell clicked again opens its editor only
        # after the double-click interval (Qt: 400 ms), so quiet must last longer than that
        settle(self.viewer, CLICK_QUIET_S, 10, expect_change_s=1.0)

    def type(self, text: str) -> None:
        """Key by key, each once the screen echoed the last (a person watches the text appear; Qt's cell editor
        drops keys that arrive while it is being opened)."""
        for ch in text:
            self.viewer.capture()  # what is on screen now: the next update is this key's echo
            if ch == "\b":
                self.viewer.press(["backspace"])
            else:
                self.viewer.type_text(ch)
            self.viewer.wait_for_update(ECHO_WAIT_S)
        settle(self.viewer, 0.35, 10, expect_change_s=1.0)

    def press(self, *keys: str) -> None:
        self.viewer.press(list(keys))
        settle(self.viewer, 0.35, 10, expect_change_s=1.0)

    def close(self) -> None:
        self.viewer.close()


# -- recording ------------------------------------------------------------------------------------------------


@dataclass
class Recorded:
    bundle: Path
    recording: Path
    summary: dict[str, Any]
    log: str
    doc: dict[str, Any]


def flow_supports(command: str, option: str) -> bool:
    """Does this checkout's `flow COMMAND` have OPTION (an option another branch adds)?"""
    key = f"{command} {option}"
    if key not in SUPPORTED:
        r = run_flow([command, "--help"], Path.cwd(), timeout=60)
        SUPPORTED[key] = option in re.sub(r"\x1b\[[0-9;]*m", "", r.stdout)
    return SUPPORTED[key]


def record(
    app: RunningApp,
    out: Path,
    name: str,
    demonstrate: Callable[[Person], None],
    watch: list[str],
    dsn_env: str | None = None,
    extra: list[str] | None = None,
) -> Recorded:
    """`flow record` on the app while `demonstrate` plays a person at a viewer connected to the proxy."""
    import yaml

    cmd = [
        sys.executable,
        "-m",
        "openadapt_flow",
        "record",
        "--url",
        app.url,
        "--out",
        str(out / "bundle"),
        "--recording",
        str(out / "rec"),
        "--name",
        name,
        "--json",
        *watch,
    ]
    if dsn_env:
        cmd += ["--dsn-env", dsn_env]
    cmd += extra or []
    proc = subprocess.Popen(cmd, cwd=out, env=flow_env(out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # the proxy is listening once this is printed
        port = re.search(r"connect your VNC viewer to [\w.:]+:(\d+)", line)
        assert port, line + (proc.stderr.read() if proc.stderr else "")
        person = Person(int(port.group(1)))
        try:
            demonstrate(person)
        finally:
            person.close()
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=150)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert proc.returncode == 0, f"flow record exited {proc.returncode}:\n{stderr[-3000:]}"
    bundle = out / "bundle"
    return Recorded(bundle, out / "rec", json.loads(stdout), stderr, yaml.safe_load((bundle / "flow.yaml").read_text()))


# -- replay and judgement -------------------------------------------------------------------------------------


def replay(
    bundle: Path,
    app: RunningApp,
    params: dict[str, str],
    run_dir: Path,
    cwd: Path,
    env_extra: dict[str, str] | None = None,
) -> tuple[int, dict[str, Any], str]:
    """`flow replay --durable` (a halt pauses: exit 3, or 4 if blocked); returns exit, report.json, output."""
    args = ["replay", str(bundle), "--url", app.url, "--durable", "--run-dir", str(run_dir), "--json"]
    for k, v in params.items():
        args += ["--param", f"{k}={v}"]
    r = run_flow(args, cwd, env=flow_env(cwd, **(env_extra or {})), timeout=180)
    report_path = run_dir / "report.json"
    report = json.loads(report_path.read_text()) if report_path.exists() else {}
    return r.returncode, report, r.stdout[-2000:] + r.stderr[-2000:]


def judge(
    app: str,
    drift: str,
    code: int,
    report: dict[str, Any],
    right: bool,
    untouched: bool,
    detail: str,
    wrong_click: bool,
    expectation: str = "complete",
    reason: str = "",
) -> Replay:
    """Classify a replay and register it. right: the system of record shows the intended result; untouched: it
    shows no write at all (a halt before the consequential step). A safe halt is a durable run's pause or block
    (exit 3 or 4) with no wrong write and no wrong click; exit 0 with a wrong result is a false success."""
    known = open_halt(app, drift) if expectation == "complete" else None
    if known is not None:  # a case that still halts today, with its reason (tests/realapps/open_halts.py)
        expectation, reason = "complete_or_halt", f"open: {known}"
    if wrong_click or (code == 0 and not right) or not (right or untouched):
        outcome = "WRONG"
    elif code == 0:
        outcome = "completed"
    elif code in (3, 4):
        outcome = "halted"  # untouched, or the right write made and not confirmed
    else:
        outcome = f"failed (exit {code})"
    result = Replay(
        app,
        drift,
        code,
        report.get("state"),
        outcome,
        detail,
        report.get("halt"),
        wrong_click,
        false_success=(code == 0 and not right),
        expectation=expectation,
        reason=reason,
        steps=report.get("steps", []),
    )
    RESULTS.append(result)
    return result


def check(result: Replay) -> None:
    """The test's verdict: never a wrong result; where the expectation is `complete`, a completed run; else a
    completed run or a safe halt."""
    msg = result.summary() + "\n" + result.evidence()
    assert result.outcome != "WRONG", "wrong result or wrong write: " + msg
    if result.expectation == "complete":
        assert result.outcome == "completed", "should have completed: " + msg
    assert result.outcome in ("completed", "halted"), "neither completed nor halted safely: " + msg


def launch(name: str, args: list[str], drift: Drift) -> RunningApp:
    return start_app(name, args, drift)
