"""Copy and restore runs (as backups, restores and careless `cp -r` do): a decision is used once per run and pause
wherever its records are, and only one place holds a run (SPEC §8; the run ledger lives outside the run's records). A
run that was moved (the old records are gone) continues where it now is.

What a copy is, per store (`copies`):
- filesystem: the run directory copied (`cp -r`), removed (`rm -r`), a file copied over; a backup is a copied
  directory, restored by copying it back.
- postgres: the run's rows (its `flow_runs` row and every row keyed by it) copied under another name in the same
  store by SQL, as a script that "duplicates" or "renames" a run would; a backup is a snapshot of those rows (kept in
  tables of the schema the store never reads), restored in place with the same row ids. Every such row: the run
  ledger is a column of the run's row, so a backup holds it too. (An export, `flow export`, is a §7 run directory
  of the run: `test_an_export_of_a_postgres_run_is_not_a_second_run`.)
- memory: the records copied under another name (test_tamper_rundir.py); it has no backups to restore.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from openadapt_flow.errors import RefusedError
from openadapt_flow.runtime.operate.approval import approve
from openadapt_flow.runtime.runs import resume
from openadapt_flow.store import PostgresRun, PostgresStore, export_run
from openadapt_flow.store import pg_run_name as run_name
from openadapt_flow.store.select import store_of_ref
from tests.attack.attack_support import Workspace, pg_workspace, workspace
from tests.e2e.demo_harness import BUNDLE_DIR
from tests.support.cli import flow_env, run_flow

pytestmark = pytest.mark.timeout(120)


class DirCopies:
    """Copies of run directories under the workspace's root."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws

    def copy(self, run: Path, name: str) -> Path:
        dest = self.ws.root / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(run, dest)
        return dest

    def copy_approval(self, src: Path, dst: Path) -> None:
        shutil.copyfile(src / "approval.json", dst / "approval.json")

    def remove(self, run: Path) -> None:
        shutil.rmtree(run)

    def backup(self, run: Path) -> Path:
        return self.copy(run, "backup")

    def restore(self, backup: Path, run: Path) -> None:
        shutil.rmtree(run)
        shutil.copytree(backup, run)


class RowCopies:
    """Copies of a PostgreSQL run's rows: its `flow_runs` row and every row of a table keyed by it (`run`)."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws

    def store(self) -> PostgresStore:
        store = store_of_ref("pg:")
        assert isinstance(store, PostgresStore)
        return store

    def _tables(self) -> list[str]:
        return [
            r[0]
            for r in self.store().all(
                "SELECT table_name FROM information_schema.columns WHERE column_name = 'run' "
                "AND table_schema = current_schema() AND table_name LIKE 'flow_%%'"
            )
        ]

    def copy(self, run: Path, name: str) -> Path:
        """INSERT … SELECT of every row of the run under a new row id and name."""
        st = self.store()
        with st.tx():
            old = PostgresRun(st, run_name(str(run))).id()
            st.run("CREATE TEMP TABLE c_runs ON COMMIT DROP AS SELECT * FROM flow_runs WHERE id = %s", (old,))
            new = st.one(
                "UPDATE c_runs SET id = nextval(pg_get_serial_sequence('flow_runs', 'id')), name = %s RETURNING id",
                (name,),
            )[0]
            st.run("INSERT INTO flow_runs SELECT * FROM c_runs")
            for t in self._tables():
                st.run(f"CREATE TEMP TABLE c_{t} ON COMMIT DROP AS SELECT * FROM {t} WHERE run = %s", (old,))
                st.run(f"UPDATE c_{t} SET run = %s", (new,))
                if t == "flow_artifacts":
                    st.run("UPDATE c_flow_artifacts SET ord = nextval(pg_get_serial_sequence('flow_artifacts', 'ord'))")
                st.run(f"INSERT INTO {t} SELECT * FROM c_{t}")
        return Path(f"pg:{name}")

    def copy_approval(self, src: Path, dst: Path) -> None:
        st = self.store()
        st.run(
            "UPDATE flow_escalations SET approval = s.approval, approval_at = s.approval_at FROM flow_escalations s "
            "WHERE s.run = %s AND flow_escalations.run = %s",
            (PostgresRun(st, run_name(str(src))).id(), PostgresRun(st, run_name(str(dst))).id()),
        )

    def remove(self, run: Path) -> None:
        self.store().run("DELETE FROM flow_runs WHERE name = %s", (str(run).removeprefix("pg:"),))

    def backup(self, run: Path) -> Path:
        """A snapshot of the run's rows, ids and all, in tables of the schema the store never reads."""
        st = self.store()
        with st.tx():
            rid = PostgresRun(st, run_name(str(run))).id()
            st.run("CREATE TABLE backup_flow_runs AS SELECT * FROM flow_runs WHERE id = %s", (rid,))
            for t in self._tables():
                st.run(f"CREATE TABLE backup_{t} AS SELECT * FROM {t} WHERE run = %s", (rid,))
        return run

    def restore(self, backup: Path, run: Path) -> None:
        """The run's rows replaced by the snapshot (the same row ids): a per-run restore from a backup."""
        st = self.store()
        with st.tx():
            self.remove(run)
            st.run("INSERT INTO flow_runs SELECT * FROM backup_flow_runs")
            for t in self._tables():
                st.run(f"INSERT INTO {t} SELECT * FROM backup_{t}")


@pytest.fixture(params=["filesystem", "postgres"])
def copies(request, tmp_path, monkeypatch) -> Any:
    """The paused-run workspace and the copies of its runs, on each store that keeps runs outside the process."""
    if request.param == "postgres":
        return RowCopies(pg_workspace(request, tmp_path, monkeypatch))
    return DirCopies(workspace(tmp_path, monkeypatch, "filesystem"))


def test_a_copied_paused_run_with_a_copied_approval_writes_once(copies):
    ws = copies.ws
    run = ws.start().run_dir
    copy = copies.copy(run, "copy")  # a backup of the paused run
    approve(run, "continue", "alice")
    copies.copy_approval(run, copy)
    assert resume(run).state == "COMPLETED" and ws.posts() == 1
    with pytest.raises(RefusedError, match="held by|older copy|already used"):
        resume(copy)
    assert ws.posts() == 1


def test_the_copy_is_refused_even_when_it_is_resumed_first(copies):
    ws = copies.ws
    run = ws.start().run_dir
    copy = copies.copy(run, "copy")
    approve(run, "continue", "alice")
    copies.copy_approval(run, copy)
    with pytest.raises(RefusedError, match=f"held by {run}"):
        resume(copy)
    with pytest.raises(RefusedError, match="held by"):
        approve(copy, "continue", "bob")
    assert ws.posts() == 0
    assert resume(run).state == "COMPLETED" and ws.posts() == 1


def test_a_moved_run_continues_where_it_now_is(copies):
    ws = copies.ws
    run = ws.start().run_dir
    approve(run, "continue", "alice")
    moved = copies.copy(run, "archive/moved")  # cp -r, then remove the original: a move across file systems
    copies.remove(run)
    assert resume(moved).state == "COMPLETED" and ws.posts() == 1
    copies.copy(moved, "run")  # and a stale copy put back where it was
    with pytest.raises(RefusedError, match="held by"):
        resume(run)
    assert ws.posts() == 1


def test_an_older_backup_restored_in_place_cannot_use_its_decision_again(copies):
    ws = copies.ws
    run = ws.start().run_dir
    approve(run, "continue", "alice")
    backup = copies.backup(run)  # taken after the approval, before the resume
    assert resume(run).state == "COMPLETED" and ws.posts() == 1
    copies.restore(backup, run)  # restored over the finished run
    with pytest.raises(RefusedError, match="older copy|already used"):
        resume(run)
    assert ws.posts() == 1


def test_a_backup_restored_elsewhere_after_the_run_moved_on_is_refused(copies):
    ws = copies.ws
    run = ws.start().run_dir
    backup = copies.copy(run, "backup")  # taken while paused, no decision yet
    approve(run, "continue", "alice")
    assert resume(run).state == "COMPLETED" and ws.posts() == 1
    copies.remove(run)  # the original is gone; the backup is all there is
    approve_err = None
    try:
        approve(backup, "continue", "bob")
    except RefusedError as e:
        approve_err = str(e)
    assert approve_err is not None and "older copy" in approve_err
    with pytest.raises(RefusedError, match="older copy"):
        resume(backup)
    assert ws.posts() == 1


def test_an_export_of_a_postgres_run_is_not_a_second_run(request, tmp_path, monkeypatch):
    """`flow export` writes a run directory to read (SPEC §7 files, the approval with them); resuming it as a run of
    its own would use the decision a second time."""
    ws = pg_workspace(request, tmp_path, monkeypatch)
    run = ws.start().run_dir
    approve(run, "continue", "alice")
    store = store_of_ref(str(run))
    assert isinstance(store, PostgresStore)
    export_run(PostgresRun(store, "run"), tmp_path / "exported")
    assert resume(run).state == "COMPLETED" and ws.posts() == 1
    with pytest.raises(RefusedError, match="export"):
        resume(tmp_path / "exported")
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
    r = run_flow(
        ["replay", str(_approval_bundle(tmp_path)), "--url", app.xvnc.url, "--run-dir", str(run), *PARAMS],
        tmp_path,
        env=env,
    )
    assert r.returncode == 3, r.stderr + r.stdout
    assert json.loads((run / "state.json").read_text())["paused_reason"] == "awaiting_approval"
    shutil.copytree(run, copy)
    assert (
        run_flow(["approve", str(run), "--decision", "continue", "--operator", "alice"], tmp_path, env=env).returncode
        == 0
    )
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
    r = run_flow(
        ["replay", str(_approval_bundle(tmp_path)), "--url", app.xvnc.url, "--run-dir", str(run), *PARAMS],
        tmp_path,
        env=env,
    )
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
    assert (
        run_flow(["approve", str(run), "--decision", "continue", "--operator", "alice"], tmp_path, env=env).returncode
        == 0
    )
    res = run_flow(["resume", str(run)], tmp_path, env=env)
    assert res.returncode == 0, res.stderr + res.stdout
    assert len(app.rows()) == 1
