"""`flow` as a Windows runner host would run it, simulated on Linux (tests/support/fake_windows.py): our code sees
sys.platform "win32", no fcntl/termios/pwd/resource, no POSIX-only os/signal names, and a fake msvcrt that logs
every lock call. The demo bundle replays to completion on its in-process fixture with every store lock taken and
released through msvcrt (docs/windows.md says what this proves and what it does not)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from openadapt_flow.backends.fixture import SOR_ENV
from openadapt_flow.store.lease import holder_here, owner_alive
from tests.support.cli import REPO, flow_env
from tests.support.demo_invoices import BUNDLE, FIXTURES, PARAMS, invoice_rows

pytestmark = pytest.mark.timeout(120)

HARNESS = REPO / "tests" / "support" / "fake_windows.py"
SNIPPET = """
import os, sys
sys.path.insert(0, {support!r})
import fake_windows
del sys.path[0]
fake_windows.simulate_windows({log!r})
from openadapt_flow.store import filelock
a = os.open({path!r}, os.O_RDWR | os.O_CREAT, 0o644)
b = os.open({path!r}, os.O_RDWR | os.O_CREAT, 0o644)
os.write(a, b"xx")  # the file position moves: the lock is still on byte 0
print(filelock.try_lock_exclusive(a), filelock.try_lock_exclusive(a), filelock.try_lock_exclusive(b))
filelock.unlock(a)
filelock.lock_exclusive(b)
filelock.unlock(b)
"""


def flow_as_windows(tmp_path: Path, *args: str, **env: str) -> tuple[subprocess.CompletedProcess, list[dict]]:
    log = tmp_path / "msvcrt.jsonl"
    r = subprocess.run(
        [sys.executable, str(HARNESS), str(log), *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=flow_env(tmp_path, **env),
        timeout=100,
    )
    events = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return r, events


def test_a_bundle_replays_to_completion_with_every_store_lock_through_msvcrt(tmp_path):
    db, run_dir = tmp_path / "sor.db", tmp_path / "run"
    r, events = flow_as_windows(
        tmp_path,
        "replay",
        str(BUNDLE),
        "--url",
        f"fixture:{FIXTURES / 'normal'}",
        "--run-dir",
        str(run_dir),
        "--json",
        *PARAMS,
        **{SOR_ENV: str(db), "DEMO_DB_DSN": f"sqlite:///{db}"},
    )
    refused = [e for e in events if e["mode"] == "import-refused"]
    assert r.returncode == 0 and not refused, f"{refused}\n{r.stdout}\n{r.stderr[-3000:]}"
    assert json.loads(r.stdout)["state"] == "COMPLETED"
    report = json.loads((run_dir / "report.json").read_text())
    assert [s["status"] for s in report["steps"]] == ["verified"] * 5
    assert invoice_rows(db) == [("ACME Corp", 1250.5)]

    locks = [e for e in events if e["mode"] in ("LK_NBLCK", "LK_UNLCK")]
    files = {Path(e["file"]).name for e in locks}
    assert str(run_dir / ".lock") in {e["file"] for e in locks}  # the run's lease
    assert any(name.startswith("run-") and name.endswith(".lock") for name in files)  # the run's ledger entry
    assert all(e["ok"] and e["pos"] == 0 and e["n"] == 1 for e in locks), locks  # byte 0, never refused
    taken = Counter(e["file"] for e in locks if e["mode"] == "LK_NBLCK")
    assert taken == Counter(e["file"] for e in locks if e["mode"] == "LK_UNLCK")  # each lock released…
    assert not [e for e in events if e["mode"] == "close-while-locked"]  # …before its file was closed
    lease = json.loads((run_dir / "lease.json").read_text())
    assert (lease["boot_id"], lease["start_time"]) == ("unknown", None)  # no /proc there: judged by heartbeat


def test_a_same_host_holder_without_a_start_time_is_judged_by_its_heartbeat():
    """A Windows lease names no start time: a fresh one is alive (a live run is not finalised), a stale one is not."""
    info = holder_here(1).model_copy(update={"start_time": None})
    assert owner_alive(info, 30.0)
    info.heartbeat_epoch -= 60
    assert not owner_alive(info, 30.0)
    reused = holder_here(1).model_copy(update={"start_time": "not-my-start"})
    assert not owner_alive(reused, 30.0)  # where a start time is known (Linux), a reused pid is still caught


def test_the_rdp_backend_is_refused_in_one_line_naming_what_it_needs(tmp_path):
    r, _ = flow_as_windows(
        tmp_path,
        "replay",
        str(BUNDLE),
        "--url",
        "rdp://127.0.0.1",
        "--run-dir",
        str(tmp_path / "run"),
        *PARAMS,
        DEMO_DB_DSN=f"sqlite:///{tmp_path / 'sor.db'}",
    )
    assert r.returncode == 2, r.stdout + r.stderr
    assert "the rdp backend needs Linux (Xvfb and xfreerdp's X11 client)" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_the_lock_module_takes_its_windows_branch_with_msvcrts_contract(tmp_path):
    log, path = tmp_path / "msvcrt.jsonl", tmp_path / ".lock"
    code = SNIPPET.format(support=str(HARNESS.parent), log=str(log), path=str(path))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=flow_env(tmp_path), timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "False", "False"]  # held; not re-entrant (as LockFileEx); the other file waits
    calls = [(e["mode"], e["pos"], e["n"], e["ok"]) for e in map(json.loads, log.read_text().splitlines())]
    assert calls == [
        ("LK_NBLCK", 0, 1, True),
        ("LK_NBLCK", 0, 1, False),
        ("LK_NBLCK", 0, 1, False),
        ("LK_UNLCK", 0, 1, True),
        ("LK_NBLCK", 0, 1, True),
        ("LK_UNLCK", 0, 1, True),
    ]
