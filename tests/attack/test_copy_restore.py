"""Copy and restore run directories (as backups, restores and careless `cp -r` do): a decision is used once per run
and pause wherever the directory is, and only one directory holds a run (SPEC §8; the run ledger lives outside run
directories). A run that was moved (the old directory is gone) continues where it now is.

Filesystem only: copying, restoring and moving a run directory is an attack on files on disk; a memory run has no
directory to copy (a copy of its records under another name: test_tamper_rundir.py).
"""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from openadapt_flow.errors import RefusedError
from openadapt_flow.runtime.operate.decisions import approve
from openadapt_flow.runtime.runs import resume
from tests.attack.attack_support import ws  # noqa: F401
from tests.e2e.demo_harness import BUNDLE_DIR
from tests.support.cli import flow_env, run_flow

pytestmark = pytest.mark.timeout(120)


def test_a_copied_paused_run_with_a_copied_approval_writes_once(ws):
    run = ws.start().run_dir
    copy = ws.root / "copy"
    shutil.copytree(run, copy)  # a backup of the paused run
    approve(run, "continue", "alice")
    shutil.copyfile(run / "approval.json", copy / "approval.json")
    assert resume(run).state == "COMPLETED" and ws.posts() == 1
    with pytest.raises(RefusedError, match="held by|older copy|already used"):
        resume(copy)
    assert ws.posts() == 1


def test_the_copy_is_refused_even_when_it_is_resumed_first(ws):
    run = ws.start().run_dir
    copy = ws.root / "copy"
    shutil.copytree(run, copy)
    approve(run, "continue", "alice")
    shutil.copyfile(run / "approval.json", copy / "approval.json")
    with pytest.raises(RefusedError, match=f"held by {run}"):
        resume(copy)
    with pytest.raises(RefusedError, match="held by"):
        approve(copy, "continue", "bob")
    assert ws.posts() == 0
    assert resume(run).state == "COMPLETED" and ws.posts() == 1


def test_a_moved_run_continues_where_it_now_is(ws):
    run = ws.start().run_dir
    approve(run, "continue", "alice")
    moved = ws.root / "archive" / "moved"
    moved.parent.mkdir()
    shutil.copytree(run, moved)  # cp -r, then remove the original: a move across file systems
    shutil.rmtree(run)
    assert resume(moved).state == "COMPLETED" and ws.posts() == 1
    shutil.copytree(moved, run)  # and a stale copy put back where it was
    with pytest.raises(RefusedError, match="held by"):
        resume(run)
    assert ws.posts() == 1


def test_an_older_backup_restored_in_place_cannot_use_its_decision_again(ws):
    run = ws.start().run_dir
    approve(run, "continue", "alice")
    backup = ws.root / "backup"
    shutil.copytree(run, backup)  # taken after the approval, before the resume
    assert resume(run).state == "COMPLETED" and ws.posts() == 1
    shutil.rmtree(run)
    shutil.copytree(backup, run)  # restored over the finished run
    with pytest.raises(RefusedError, match="older copy|already used"):
        resume(run)
    assert ws.posts() == 1


def test_a_backup_restored_elsewhere_after_the_run_moved_on_is_refused(ws):
    run = ws.start().run_dir
    backup = ws.root / "backup"
    shutil.copytree(run, backup)  # taken while paused, no decision yet
    approve(run, "continue", "alice")
    assert resume(run).state == "COMPLETED" and ws.posts() == 1
    shutil.rmtree(run)  # the original is gone; the backup is all there is
    approve_err = None
    try:
        approve(backup, "continue", "bob")
    except RefusedError as e:
        approve_err = str(e)
    assert approve_err is not None and "older copy" in approve_err
    with pytest.raises(RefusedError, match="older copy"):
        resume(backup)
    assert ws.posts() == 1


# ---- the same on the real demo app, its SQLite system of record and a real Xvnc desktop ----

PARAMS = ["--param", "vendor=ACME Corp", "--param", "amount=1250.50"]


def _approval_bundle(tmp_path):
    """The demo bundle with `approval: before` on its consequential save: the run pauses with the form filled."""
    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLE_DIR, bundle)
    flow = yaml.safe_load((bundle / "flow.yaml").read_text())
    next(s for s in flow["steps"] if s["id"] == "save")["approval"] = "before"
    (bundle / "flow.yaml").write_text(yaml.safe_dump(flow, sort_keys=False))
    return bundle


def _fill_form(app):
    """The desktop shows the same filled form again (as a restored desktop snapshot would)."""
    app.click(*app.center("list", "new"))
    app.wait_screen("form")
    for field, value in (("vendor", "ACME Corp"), ("amount", "1250.50")):
        app.click(*app.center("form", field))
        app.type(value)


@pytest.mark.timeout(300)
def test_a_copied_demo_run_posts_one_row(tmp_path, demo_app):
    app = demo_app("normal")
    env = flow_env(tmp_path, DEMO_DB_DSN=f"sqlite:///{app.db_path}")
    run, copy = tmp_path / "run", tmp_path / "copy"
    r = run_flow(["replay", str(_approval_bundle(tmp_path)), "--url", app.xvnc.url, "--run-dir", str(run), *PARAMS], tmp_path, env=env)
    assert r.returncode == 3, r.stderr + r.stdout
    assert json.loads((run / "state.json").read_text())["paused_reason"] == "awaiting_approval"
    shutil.copytree(run, copy)
    assert run_flow(["approve", str(run), "--operator", "alice"], tmp_path, env=env).returncode == 0
    shutil.copyfile(run / "approval.json", copy / "approval.json")
    res = run_flow(["resume", str(run)], tmp_path, env=env)
    assert res.returncode == 0, res.stderr + res.stdout
    assert len(app.rows()) == 1
    app.wait_screen("list")
    _fill_form(app)
    res = run_flow(["resume", str(copy)], tmp_path, env=env)
    assert res.returncode == 6, res.stderr + res.stdout
    assert len(res.stderr.strip().splitlines()) == 1 and "held by" in res.stderr
    assert len(app.rows()) == 1  # exactly one row


@pytest.mark.timeout(300)
def test_a_demo_run_never_resumes_past_its_pause_without_the_decision(tmp_path, demo_app):
    app = demo_app("normal")
    env = flow_env(tmp_path, DEMO_DB_DSN=f"sqlite:///{app.db_path}")
    run = tmp_path / "run"
    r = run_flow(["replay", str(_approval_bundle(tmp_path)), "--url", app.xvnc.url, "--run-dir", str(run), *PARAMS], tmp_path, env=env)
    assert r.returncode == 3, r.stderr + r.stdout
    pending = run / "pending_escalation.json"
    saved = pending.read_text()
    attacks = {
        "pending deleted": lambda: pending.unlink(),
        "reason awaiting_timer": lambda: pending.write_text(saved.replace('"awaiting_approval"', '"awaiting_timer"')),
        "reason awaiting_child": lambda: pending.write_text(saved.replace('"awaiting_approval"', '"awaiting_child"')),
    }
    for name, attack in attacks.items():
        attack()
        res = run_flow(["resume", str(run)], tmp_path, env=env)
        assert res.returncode == 6, (name, res.returncode, res.stderr + res.stdout)
        assert app.rows() == [], name
        pending.write_text(saved)
    journal = run / "journal.jsonl"
    whole = journal.read_text()
    journal.write_text("".join(whole.splitlines(keepends=True)[:-2]))  # cut escalation_opened + paused
    res = run_flow(["resume", str(run)], tmp_path, env=env)
    assert res.returncode == 6 and "cut" in res.stderr, res.stderr + res.stdout
    assert app.rows() == []
    journal.write_text(whole)
    assert run_flow(["approve", str(run), "--operator", "alice"], tmp_path, env=env).returncode == 0
    res = run_flow(["resume", str(run)], tmp_path, env=env)
    assert res.returncode == 0, res.stderr + res.stdout
    assert len(app.rows()) == 1
