"""Issue 33, item 3, on the real demo app over VNC: a halted item leaves typed text behind; the next replay's start
check halts it before any input (the screen and the database untouched); `reset_app` restarts the app by the
bundle's reset command; the replay after it completes with exactly one right row."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
from pathlib import Path

import pytest
import yaml

from openadapt_flow.backends.spec import parse_url
from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.runtime import check_start_state, reset_app
from openadapt_flow.vision.diff import changed_box
from openadapt_flow.vision.ocr import OcrEngine
from tests.e2e.demo_harness import BUNDLE_DIR, REPO, capture
from tests.support.cli import flow_env, run_flow
from tests.support.xserver import wait_until

pytestmark = pytest.mark.timeout(240)

# The demo list screen, as the bundle's own `back` step checks it; the form's label and the saved screen's title
# are what an unfinished item shows there.
START = [
    {"text_present": "Invoices", "region": [44, 33, 134, 23]},
    {"text_absent": "Vendor", "region": [41, 122, 72, 15]},
    {"text_absent": "Saved", "region": [43, 33, 99, 23]},
]
# The restart command: stop the app whose pid is in the pid file, then become a new one (the same database).
RESTART = """\
import os, signal, sys, time
pid_file, db, ready = sys.argv[1:4]
old = int(open(pid_file).read())
try:
    os.kill(old, signal.SIGTERM)
    while os.path.exists(f"/proc/{old}") and open(f"/proc/{old}/stat").read().split()[2] != "Z":
        time.sleep(0.02)
except ProcessLookupError:
    pass
open(pid_file, "w").write(str(os.getpid()))
os.execv(sys.executable, [sys.executable, "-m", "openadapt_flow.demo.app", "--db", db, "--ready-file", ready])
"""


@pytest.fixture
def bundle(tmp_path: Path, demo_app):
    app = demo_app("normal")
    pid_file = tmp_path / "app.pid"
    pid_file.write_text(str(app.pid))
    (tmp_path / "restart.py").write_text(RESTART)
    root = tmp_path / "bundle"
    shutil.copytree(BUNDLE_DIR, root)
    doc = yaml.safe_load((root / "flow.yaml").read_text())
    doc["start"] = START
    # the command runs on the runner host: here the app's display is a local Xvnc, named in the command
    doc["reset"] = {
        "command": [
            "env",
            f"DISPLAY={app.xvnc.env['DISPLAY']}",
            f"XAUTHORITY={app.xvnc.env['XAUTHORITY']}",
            f"PYTHONPATH={REPO}",
            sys.executable,
            str(tmp_path / "restart.py"),
            str(pid_file),
            str(app.db_path),
            str(tmp_path / "restarted.json"),
        ],
        "wait_for": {"text_present": "Invoices", "region": [44, 33, 134, 23]},
        "timeout_s": 60,
    }
    (root / "flow.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    try:
        yield app, root
    finally:
        pid = int(pid_file.read_text())
        if pid != app.pid:  # the app the reset started: stopped by its own pid
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass


def replay(tmp_path: Path, app, root: Path, name: str, vendor: str, amount: str, config: Path | None = None):
    run_dir = tmp_path / name
    args = [
        "replay",
        str(root),
        "--url",
        app.xvnc.url,
        "--run-dir",
        str(run_dir),
        "--json",
        "--param",
        f"vendor={vendor}",
        "--param",
        f"amount={amount}",
        *(["--config", str(config)] if config else []),
    ]
    r = run_flow(args, tmp_path, env=flow_env(tmp_path, DEMO_DB_DSN=f"sqlite:///{app.db_path}"), timeout=150)
    assert "Traceback" not in r.stderr, r.stderr
    journal = [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines()]
    return r, json.loads((run_dir / "state.json").read_text()), journal


def test_a_halted_item_is_not_committed_by_the_next_one_and_a_reset_brings_the_app_back(tmp_path, bundle, monkeypatch):
    app, root = bundle
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FLOW_KEY_FILE", str(tmp_path / "install.key"))
    # item 1 stops after typing both fields: its Save is refused by policy (as any halt after input would leave it)
    deny = tmp_path / "deny.yaml"
    deny.write_text(
        yaml.safe_dump(
            {
                "schema": "openadapt-flow/config@1",
                "policy": {"deny": [{"step": "save", "reason": "the amount needs a second look"}]},
            }
        )
    )
    r, state, journal = replay(tmp_path, app, root, "item-1", "Initech", "40", deny)
    assert r.returncode == 4 and state["state"] == "BLOCKED", r.stdout + r.stderr
    assert [rec["step"] for rec in journal if rec["type"] == "action_sent"] == ["open-form", "vendor", "amount"]
    assert app.current_screen() == "form" and app.rows() == []  # typed text left behind, nothing saved

    # item 2 on the same app: the start check halts it before any input
    left = capture(app.xvnc)
    r, state, journal = replay(tmp_path, app, root, "item-2", "Globex", "7")
    assert r.returncode == 1 and state["state"] == "FAILED" and state["halt_category"] == "start_state", r.stdout
    assert state["message"].startswith("the app is not where the recording started: ")
    assert "'Vendor' is shown" in state["message"], state["message"]  # (the form's title reads like 'Invoices')
    types = [rec["type"] for rec in journal]
    assert "start_checked" in types and "action_dispatched" not in types
    # nothing reached the app: the screen is as item 1 left it but for the text cursor, gone with the keyboard focus
    # when the pointer was parked off the window (no window manager here: the focus follows the pointer)
    now = capture(app.xvnc)
    moved = changed_box(left, now)
    assert moved is None or moved[2] <= 3, moved
    assert app.current_screen() == "form" and app.rows() == []
    ocr = OcrEngine()
    assert ocr.find(now, "Initech") and not ocr.find(now, "Globex")  # item 1's leftover, none of item 2's values

    # the batch's reset: the bundle's command restarts the app; the start state then holds
    config = DeployConfig.model_validate({"schema": "openadapt-flow/config@1"})
    spec = parse_url(app.xvnc.url)
    got = reset_app(root, spec, config)
    assert got.ok, got.reason
    assert int((tmp_path / "app.pid").read_text()) != app.pid and (tmp_path / "restarted.json").exists()
    assert check_start_state(root, spec, config).ok

    # item 2 again: one right row, the only row
    r, state, journal = replay(tmp_path, app, root, "item-2-again", "Globex", "7")
    assert r.returncode == 0 and state["state"] == "COMPLETED", r.stdout + r.stderr
    assert [(v, a) for _, v, a, _ in app.rows()] == [("Globex", 7.0)]
    checked = next(rec for rec in journal if rec["type"] == "start_checked")
    assert checked["data"]["ok"] and checked["seq"] < next(
        rec["seq"] for rec in journal if rec["type"] == "action_dispatched"
    )


def test_a_reset_whose_wait_for_never_holds_fails_with_its_reason(tmp_path, bundle):
    app, root = bundle
    doc = yaml.safe_load((root / "flow.yaml").read_text())
    doc["reset"]["wait_for"] = {"text_present": "Welcome back"}
    doc["reset"]["timeout_s"] = 4
    (root / "flow.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    got = reset_app(root, parse_url(app.xvnc.url), DeployConfig.model_validate({"schema": "openadapt-flow/config@1"}))
    assert not got.ok and "wait_for text_present 'Welcome back' did not hold within 4s" in got.reason, got.reason
    assert got.waited_s < 30
    wait_until(lambda: (tmp_path / "restarted.json").exists(), 20, "the restarted app")  # the command itself ran
