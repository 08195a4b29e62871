"""An injected ENOSPC/EIO at every write point of a real durable run (store/faults.py FLOW_IO_FAULT): the disk is full
from that write on. Never FAILED, never a crash: exit 5 with a valid journal (or no run at all if the start-up did not
finish: nothing was sent), and once space is back, reconcile + resume finish it with exactly one row. Frames and
reports that cannot be written never stop a run.

Filesystem only: a full disk or an I/O error is a fault of files being written; the memory store writes no file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openadapt_flow.store import load_journal
from tests.e2e.demo_harness import BUNDLE_DIR
from tests.support.cli import flow_env, run_flow

pytestmark = pytest.mark.timeout(300)
PARAMS = ["--param", "vendor=ACME Corp", "--param", "amount=1250.50"]

# (write point pattern, matches to let through first, errno)
DISK_FULL_AT = [  # journal record numbers: a healthy run of the demo journals 35 records (save: 19–27, back: 28–33)
    ("lease.json", 0, "ENOSPC"),  # start-up, before anything
    ("journal", 0, "ENOSPC"),  # run_started: the run never began
    ("state.json", 0, "ENOSPC"),  # start-up, before the manifest
    ("manifest.json", 0, "ENOSPC"),
    ("journal", 9, "ENOSPC"),  # vendor's action_dispatched: no input sent
    ("journal", 23, "ENOSPC"),  # save's action_dispatched: the click is never sent
    ("journal", 24, "EIO"),  # save's action_sent: the click landed, unrecorded; resume re-reads the effect
    ("journal", 27, "ENOSPC"),  # save's step_verified
    ("journal", 34, "ENOSPC"),  # run_finished
    ("journal:fsync", 7, "ENOSPC"),  # save's action_dispatched fsync: cut back, never sent
    ("journal:fsync", 8, "EIO"),  # save's step_verified fsync
    ("checkpoint.json", 3, "ENOSPC"),  # the save step's checkpoint
    ("state.json", 1, "ENOSPC"),  # the final state write
]


def _replay(tmp_path: Path, app, env: dict, run_dir: Path, **extra: str):
    return run_flow(
        ["replay", str(BUNDLE_DIR), "--url", app.xvnc.url, "--durable", "--run-dir", str(run_dir), *PARAMS],
        tmp_path,
        env=dict(env, **extra),
    )


@pytest.mark.parametrize("point,skip,err", DISK_FULL_AT, ids=[f"{p}#{n}-{e}" for p, n, e in DISK_FULL_AT])
def test_a_full_disk_at_any_write_point_interrupts_and_resumes(tmp_path, demo_app, point, skip, err):
    app = demo_app("normal")
    env = flow_env(tmp_path, DEMO_DB_DSN=f"sqlite:///{app.db_path}")
    runs = tmp_path / "runs"
    run_dir = runs / "run"
    r = _replay(
        tmp_path,
        app,
        env,
        run_dir,
        FLOW_IO_FAULT=point,
        FLOW_IO_FAULT_SKIP=str(skip),
        FLOW_IO_FAULT_STICKY="1",
        FLOW_IO_FAULT_ERRNO=err,
    )
    out = r.stdout + r.stderr
    assert r.returncode == 5, (r.returncode, out[-1500:])
    assert "internal error" not in out and "Traceback" not in out and "injected at" in out
    if not (run_dir / "manifest.json").exists():  # the start-up did not finish: no run, nothing sent; replay again
        assert app.rows() == []
        again = _replay(tmp_path, app, env, runs / "again")
        assert again.returncode == 0, again.stdout + again.stderr
    else:
        load_journal(run_dir / "journal.jsonl", (tmp_path / "install.key").read_bytes())  # valid: no half record
        st = run_flow(["status", str(run_dir), "--json"], tmp_path, env=env)
        assert st.returncode == 0 and json.loads(st.stdout)["state"] == "INTERRUPTED", st.stdout + st.stderr
        assert run_flow(["reconcile", str(runs)], tmp_path, env=env).returncode == 0
        res = run_flow(["resume", str(run_dir), "--json"], tmp_path, env=env)
        assert res.returncode == 0, res.stdout + res.stderr
        assert json.loads(res.stdout)["state"] == "COMPLETED"
    assert [(v, a) for _, v, a, _ in app.rows()] == [("ACME Corp", 1250.5)]  # exactly one row


@pytest.mark.parametrize("point", ["frames/*", "report*"])
def test_frames_and_reports_that_cannot_be_written_never_stop_a_run(tmp_path, demo_app, point):
    app = demo_app("normal")
    env = flow_env(tmp_path, DEMO_DB_DSN=f"sqlite:///{app.db_path}")
    run_dir = tmp_path / "run"
    r = _replay(tmp_path, app, env, run_dir, FLOW_IO_FAULT=point)
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads((run_dir / "state.json").read_text())["state"] == "COMPLETED"
    assert len(app.rows()) == 1
    finished = [json.loads(l) for l in (run_dir / "journal.jsonl").read_text().splitlines()][-1]
    if point == "frames/*":
        assert finished["data"]["frame_errors"] and not any((run_dir / "frames").glob("*.png"))
    else:
        assert "report not written" in r.stderr and not (run_dir / "report.json").exists()


def test_a_full_disk_while_pausing_interrupts_instead(tmp_path, demo_app):
    app = demo_app("normal", refute_save=True)  # the save writes nothing: the effect is ABSENT and the run pauses
    env = flow_env(tmp_path, DEMO_DB_DSN=f"sqlite:///{app.db_path}")
    run_dir = tmp_path / "run"
    r = _replay(tmp_path, app, env, run_dir, FLOW_IO_FAULT="pending_escalation.json", FLOW_IO_FAULT_STICKY="1")
    assert r.returncode == 5, r.stdout + r.stderr
    assert "internal error" not in r.stdout + r.stderr
    load_journal(run_dir / "journal.jsonl", (tmp_path / "install.key").read_bytes())
    res = run_flow(["resume", str(run_dir), "--json"], tmp_path, env=env)  # space is back: the halt is decided on again
    assert res.returncode in (3, 6), res.stdout + res.stderr
    assert (
        json.loads((run_dir / "state.json").read_text())["state"] == "PAUSED"
        and (run_dir / "pending_escalation.json").exists()
    )
    assert app.rows() == []


@pytest.mark.parametrize("point", ["journal", "state.json", "checkpoint.json"])
def test_a_full_disk_during_resume_interrupts_it_and_a_later_resume_finishes(tmp_path, demo_app, point):
    app = demo_app("normal")
    env = flow_env(tmp_path, DEMO_DB_DSN=f"sqlite:///{app.db_path}")
    runs = tmp_path / "runs"
    run_dir = runs / "run"
    r = _replay(tmp_path, app, env, run_dir, FLOW_CRASH_AT="after:action_sent@save")  # the save landed, unverified
    assert r.returncode == -9, r.stderr
    assert run_flow(["reconcile", str(runs)], tmp_path, env=env).returncode == 0
    full = run_flow(["resume", str(run_dir)], tmp_path, env=dict(env, FLOW_IO_FAULT=point, FLOW_IO_FAULT_STICKY="1"))
    assert full.returncode == 5, full.stdout + full.stderr
    assert "internal error" not in full.stdout + full.stderr
    load_journal(run_dir / "journal.jsonl", (tmp_path / "install.key").read_bytes())
    assert run_flow(["reconcile", str(runs)], tmp_path, env=env).returncode == 0
    res = run_flow(["resume", str(run_dir), "--json"], tmp_path, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert [(v, a) for _, v, a, _ in app.rows()] == [("ACME Corp", 1250.5)]
