"""A full disk under a real durable run (SPEC §6): ENOSPC on the run's own files is never FAILED and never a crash.
The run stops at a safe boundary as INTERRUPTED (exit 5) — or completes, if only a view (the report) did not fit —
its journal stays valid, and resume finishes it once space is freed, with exactly one row.

Filesystem only: a real full tmpfs under the run directory; the memory store writes no file.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from openadapt_flow.store import load_journal
from tests.e2e.demo_harness import BUNDLE_DIR
from tests.support.cli import flow_env, run_flow

pytestmark = pytest.mark.timeout(300)
PARAMS = ["--param", "vendor=ACME Corp", "--param", "amount=1250.50"]


@pytest.fixture
def small_disk(tmp_path):
    """mount(size) -> a tmpfs of that size under tmp_path (we run as root); unmounted after the test."""
    assert os.geteuid() == 0, "mounting a small tmpfs needs root"
    mounted: list[Path] = []

    def mount(size: str) -> Path:
        where = tmp_path / f"disk-{size}"
        where.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], check=True, timeout=30)
        mounted.append(where)
        return where

    yield mount
    for where in mounted:
        subprocess.run(["umount", "-l", str(where)], check=False, timeout=30)


@pytest.mark.parametrize("size", ["300k", "100k", "40k", "16k"])
def test_a_full_disk_interrupts_and_resume_finishes_once_space_is_freed(tmp_path, demo_app, small_disk, size):
    app = demo_app("normal")
    env = flow_env(tmp_path, DEMO_DB_DSN=f"sqlite:///{app.db_path}")
    disk = small_disk(size)
    run_dir = disk / "run"
    r = run_flow(
        ["replay", str(BUNDLE_DIR), "--url", app.xvnc.url, "--durable", "--run-dir", str(run_dir), *PARAMS],
        tmp_path,
        env=env,
    )
    out = r.stdout + r.stderr
    assert r.returncode in (0, 5), (r.returncode, out[-1500:])  # never FAILED (1), internal (70) or an abort (-6)
    assert "internal error" not in out and "Traceback" not in out and "terminate called" not in out
    assert len(app.rows()) <= 1
    if (run_dir / "manifest.json").exists():
        load_journal(run_dir / "journal.jsonl", (tmp_path / "install.key").read_bytes())  # the chain is whole
    if r.returncode == 0:
        assert "report not written" in out  # only a view did not fit; the run itself completed
        assert json.loads((run_dir / "state.json").read_text())["state"] == "COMPLETED"
    else:
        subprocess.run(["mount", "-o", "remount,size=20m", str(disk)], check=True, timeout=30)  # space is freed
        if (run_dir / "manifest.json").exists():
            run_flow(["reconcile", str(disk)], tmp_path, env=env)
            res = run_flow(["resume", str(run_dir), "--json"], tmp_path, env=env)
        else:  # the disk filled before the run began: nothing was sent; replay again
            res = run_flow(
                [
                    "replay",
                    str(BUNDLE_DIR),
                    "--url",
                    app.xvnc.url,
                    "--durable",
                    "--run-dir",
                    str(disk / "again"),
                    *PARAMS,
                ],
                tmp_path,
                env=env,
            )
        assert res.returncode == 0, res.stdout + res.stderr
    assert [(v, a) for _, v, a, _ in app.rows()] == [("ACME Corp", 1250.5)]
