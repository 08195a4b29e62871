"""`flow record --watch-file`: a tiny Tk app that saves a text file, recorded on a real Xvnc; the step after which
the file changed becomes consequential with a file effect declaring the whole change (the typed value as its param),
and the bundle replays with another value, the effect CONFIRMED; on a file the save then overwrites, CONFLICTING."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.backends.vnc import VncBackend
from openadapt_flow.procs import stop_process
from openadapt_flow.runtime.act.settle import settle
from tests.support.cli import REPO, load_script, record_via_proxy, run_flow
from tests.support.note_app import ENTRY, SAVE
from tests.support.xserver import wait_until

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def notes(xvnc, tmp_path):
    path, ready = tmp_path / "notes.txt", tmp_path / "ready"
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "tests" / "support" / "note_app.py"), str(path), str(ready)],
        env=xvnc.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: ready.exists() or proc.poll() is not None, 20, "the note app's ready file")
        assert proc.poll() is None, "the note app exited"
        yield path
    finally:
        stop_process(proc)


def centre(box):
    return box[0] + box[2] // 2, box[1] + box[3] // 2


def drive(port: int) -> None:
    perform = load_script("record_demo_fixture").perform
    viewer = VncBackend(BackendSpec(kind="vnc", host="127.0.0.1", port=port, io_timeout_s=15))
    try:
        settle(viewer, 0.2, 5)
        perform(viewer, "type", *centre(ENTRY), "hello world")
        settle(viewer, 0.35, 10, expect_change_s=2.0)
        perform(viewer, "click", *centre(SAVE), "")
        settle(viewer, 0.35, 10, expect_change_s=2.0)
    finally:
        viewer.close()


def record(xvnc, tmp_path: Path, path: Path) -> tuple[dict, str]:
    r = record_via_proxy(
        ["--url", xvnc.url, "--out", str(tmp_path / "bundle"), "--watch-file", str(path), "--name", "notes", "--json"],
        tmp_path,
        drive,
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), r.stderr


def test_a_step_that_changed_the_watched_file_declares_its_whole_change(tmp_path, xvnc, notes):
    summary, log = record(xvnc, tmp_path, notes)
    assert notes.read_text() == "Note: hello world\n"
    doc = yaml.safe_load((tmp_path / "bundle" / "flow.yaml").read_text())
    assert [s["action"] for s in doc["steps"]] == ["type", "click"]
    (param,) = doc["params"]
    assert doc["params"][param]["example"] == "hello world"
    save = doc["steps"][1]
    assert save["consequential"] is True
    # the whole change the save made (the file created holding one line), the typed value as its param
    assert save["effect"] == {
        "kind": "file",
        "path": str(notes.resolve()),
        "changes": [{"added": ["Note: {" + param + "}"]}],
    }
    assert not doc["steps"][0].get("consequential")

    notes.unlink()  # the file as the recording started: not there
    r = run_flow(
        [
            "replay",
            str(tmp_path / "bundle"),
            "--url",
            xvnc.url,
            "--run-dir",
            str(tmp_path / "run"),
            "--json",
            "--param",
            f"{param}=goodbye moon",
        ],
        tmp_path,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert notes.read_text() == "Note: goodbye moon\n"
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    effect = next(s for s in report["steps"] if s["id"] == save["id"])["effect"]
    assert effect["verdict"] == "CONFIRMED"
    assert effect["observed"]["value"] == {"exists": True, "lines": 1}  # a count in the report, never the digests

    # again on the file the last run left: this app's save overwrites the note there — not the change recorded
    r = run_flow(
        [
            "replay",
            str(tmp_path / "bundle"),
            "--url",
            xvnc.url,
            "--run-dir",
            str(tmp_path / "run2"),
            "--json",
            "--param",
            f"{param}=third note",
        ],
        tmp_path,
    )
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert notes.read_text() == "Note: third note\n"
    report = json.loads((tmp_path / "run2" / "report.json").read_text())
    assert report["transaction_outcome"] == "RECONCILIATION_REQUIRED"
    assert report["halt"]["step"] == save["id"] and report["halt"]["category"] == "collateral", report["halt"]
    assert "removed 'Note: goodbye moon' and added 'Note: third note'" in report["halt"]["message"], report["halt"]


def test_watch_file_is_one_system_of_record_among_the_watch_flags(tmp_path):
    r = run_flow(
        [
            "record",
            "--url",
            "vnc://127.0.0.1:1",
            "--out",
            str(tmp_path / "b"),
            "--watch-file",
            str(tmp_path / "f"),
            "--watch-sqlite",
            str(tmp_path / "db"),
        ],
        tmp_path,
    )
    assert r.returncode == 2 and "watch one system of record" in r.stderr and "Traceback" not in r.stderr
