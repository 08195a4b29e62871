"""PostgreSQL lost in the middle of a run's start (`begin_run`): a restart must never make an honest run look tampered.

A fleet worker starts a submitted run, whose row already holds the manifest `flow submit` wrote (no backend, the
submit's `created_at`). `begin_run` journals `run_started` pinning the digest of the manifest the worker runs with,
writes state RUNNING, and only then that manifest. Before the fix each was its own commit: a server restarted (or the
session killed) between them left the journal pinning one manifest and the row holding the submit's — `flow resume`
refused the run, "manifest changed since the run started (tampered)", and the reconciler could never start it again
(it has a journal: not queued). Now the start is one transaction: cut before its commit, nothing of it stays, the run
is still queued (its start is simply retried) and the retry pins and writes the same bytes.

The cut comes at the exact point through begin_run's own crash points (a hook stands in for `crash_point`, so the
process goes on as a live worker would): `pg_ctl restart -m immediate` / `-m fast`, or `pg_terminate_backend` of the
store's session. Each test has its own server (a restart would cut every other test's sessions)."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from openadapt_flow.records.rundoc import ManifestBody
from openadapt_flow.records.states import RecordType
from openadapt_flow.runtime.fleet.claim import read_submission
from openadapt_flow.runtime.fleet.submit import submit
from openadapt_flow.runtime.start import lifecycle
from openadapt_flow.runtime.start.lifecycle import begin_run, check_manifest, queued
from openadapt_flow.store import PostgresStore, digest_manifest
from openadapt_flow.store import journal as journal_mod
from openadapt_flow.store.atomic import StorageFault
from openadapt_flow.store.keys import load_key
from openadapt_flow.store.postgres.run import PostgresRun
from tests.support.cli import flow_env, run_flow
from tests.support.demo_invoices import BUNDLE
from tests.support.pg import PgServer, pg_server, running_pg, store_spec, why_not_available  # noqa: F401

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(why_not_available() is not None, reason=str(why_not_available())),
]
POINTS = ["after:run_started", "start:state_written"]  # between run_started and the manifest: each write's gap
CUTS = ["immediate", "fast", "terminate"]


@pytest.fixture
def own_pg() -> Iterator[PgServer]:
    with running_pg() as server:
        yield server


def _cut_at(monkeypatch: pytest.MonkeyPatch, point: str, cut) -> list[str]:
    """Run `cut()` once when begin_run reaches `point` (then go on, as a live process does); the points reached."""
    seen: list[str] = []

    def hook(name: str, step: str | None = None) -> None:
        seen.append(name)
        if name == point and seen.count(name) == 1:
            cut()

    monkeypatch.setattr(lifecycle, "crash_point", hook)
    monkeypatch.setattr(journal_mod, "crash_point", hook)
    return seen


def _cutter(server: PgServer, store: PostgresStore, how: str):
    if how == "terminate":
        pid = store.conn().info.backend_pid

        def kill() -> None:
            with psycopg.connect(server.dsn(), autocommit=True) as c:
                assert c.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone() == (True,)

        return kill
    return lambda: server.restart(how)


def _worker_manifest(run: PostgresRun) -> ManifestBody:
    """The manifest a worker starts a submitted run with: the submit's, with the desktop it holds and its own time."""
    body = {k: v for k, v in run.manifest().items() if k != "schema"}
    return {**body, "backend": {"url": "vnc://127.0.0.1:5999"}, "created_at": "2099-01-01T00:00:00Z"}  # type: ignore[typeddict-item]


@pytest.mark.parametrize("how", CUTS)
@pytest.mark.parametrize("point", POINTS)
def test_a_store_lost_inside_a_submitted_runs_start_leaves_it_queued_never_tampered(
    own_pg: PgServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str, how: str
):
    env = flow_env(tmp_path, PGPASSWORD=own_pg.password)
    monkeypatch.setenv("FLOW_KEY_FILE", env["FLOW_KEY_FILE"])
    spec = store_spec(own_pg, f"s_{tmp_path.name.lower()}", monkeypatch)
    ref = submit(spec, BUNDLE, {"vendor": "ACME Corp", "amount": "1250.50"}, "invoices")
    name = ref.removeprefix("pg:")
    key = load_key(create=True)

    store = PostgresStore(spec)
    run = store.open_run(ref)
    manifest = _worker_manifest(run)
    seen = _cut_at(monkeypatch, point, _cutter(own_pg, store, how))
    with pytest.raises(StorageFault):
        begin_run(run, key, manifest, {"steps": 3, "durable": True, "lease_generation": 1})
    assert point in seen and "start:manifest_written" not in seen

    # what the server kept, read afresh: the run is still queued (its start is retried), or whole — never tampered
    after = PostgresStore(spec).open_run(ref)
    if after.has_journal():
        check_manifest(after, after.load_journal(key).records)  # raises "tampered" on the old start
    assert queued(after) and read_submission(PostgresStore(spec), name).queued, after.state()
    for cmd in (["resume", ref], ["approve", ref, "--decision", "reconcile", "--operator", "ops"]):
        res = run_flow([*cmd, "--store", spec], tmp_path, env)
        assert "tampered" not in res.stdout + res.stderr, (cmd, res.stderr)

    # the worker's retry starts it cleanly: the manifest pinned is the manifest stored
    monkeypatch.setattr(lifecycle, "crash_point", lambda *a, **k: None)
    monkeypatch.setattr(journal_mod, "crash_point", lambda *a, **k: None)
    retry = PostgresStore(spec).open_run(ref)
    _, started = begin_run(retry, key, manifest, {"steps": 3, "durable": True, "lease_generation": 2})
    again = PostgresStore(spec).open_run(ref)
    records = again.load_journal(key).records
    assert [r["type"] for r in records] == [RecordType.RUN_STARTED] and records[0]["hash"] == started["hash"]
    check_manifest(again, records)
    assert again.manifest_digest() == digest_manifest({"schema": again.manifest()["schema"], **manifest})
    assert again.state()["state"] == "RUNNING" and not queued(again)


@pytest.mark.parametrize("point", POINTS)
def test_a_store_lost_inside_a_new_runs_start_leaves_no_run(
    own_pg: PgServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str
):
    """A run started by `flow replay` (no manifest before its start): the cut leaves no run, its name free again."""
    monkeypatch.setenv("FLOW_KEY_FILE", str(tmp_path / "install.key"))
    spec = store_spec(own_pg, f"n_{tmp_path.name.lower()}", monkeypatch)
    key = load_key(create=True)
    store = PostgresStore(spec)
    run = store.create_run("pg:plain")
    manifest: ManifestBody = {"run_id": "run-plain", "params": {}, "config": {}}  # type: ignore[typeddict-item]
    _cut_at(monkeypatch, point, _cutter(own_pg, store, "immediate"))
    with pytest.raises(StorageFault):
        begin_run(run, key, manifest, {"steps": 1, "durable": True, "lease_generation": 1})
    fresh = PostgresStore(spec)
    assert fresh.list_runs() == [] and fresh.unstarted() == []  # not even a cut start-up to clear
    fresh.check_new("pg:plain")  # the name holds no run: a replay under it starts afresh


def test_a_statement_after_its_transactions_session_was_lost_never_commits_on_a_new_one(
    own_pg: PgServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """`tx()` is all or nothing even for a caller that goes on after a failed statement: the connection is not
    silently reopened inside the transaction (a statement there would commit alone, outside it)."""
    spec = store_spec(own_pg, f"t_{tmp_path.name.lower()}", monkeypatch)
    store = PostgresStore(spec)
    kill = _cutter(own_pg, store, "terminate")
    with pytest.raises(StorageFault):
        with store.tx():
            store.run("INSERT INTO flow_runs (name) VALUES ('first')")
            kill()
            with pytest.raises(StorageFault):
                store.run("SELECT 1")  # the session is gone: this statement fails
            store.run("INSERT INTO flow_runs (name) VALUES ('second')")  # must not land on a new session
    names = [r[0] for r in PostgresStore(spec).all("SELECT name FROM flow_runs ORDER BY name")]
    assert names == []
    assert store.one("SELECT 1") == (1,)  # outside a transaction the lost session is replaced, as before


_START_IN_A_CHILD = """
import sys
from openadapt_flow.runtime.start.lifecycle import begin_run
from openadapt_flow.store import PostgresStore
from openadapt_flow.store.keys import load_key
spec, ref = sys.argv[1:3]
run = PostgresStore(spec).open_run(ref)
body = {k: v for k, v in run.manifest().items() if k != "schema"}
begin_run(run, load_key(create=True), {**body, "backend": {"url": "vnc://127.0.0.1:5999"}}, {"steps": 3})
"""


@pytest.mark.parametrize("point", POINTS)
def test_a_worker_killed_inside_a_submitted_runs_start_leaves_it_queued(
    pg_server: PgServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str
):
    """The same window with the worker SIGKILLed there (FLOW_CRASH_AT) instead of the store cut: the server rolls the
    start back when the dead session goes, so the reconciler re-queues the run and no resume ever sees it tampered."""
    env = flow_env(tmp_path, PGPASSWORD=pg_server.password)
    spec = store_spec(pg_server, f"k_{tmp_path.name.lower()}", monkeypatch)
    ref = submit(spec, BUNDLE, {"vendor": "ACME Corp", "amount": "1250.50"}, "invoices")
    r = subprocess.run(
        [sys.executable, "-c", _START_IN_A_CHILD, spec, ref], env=dict(env, FLOW_CRASH_AT=point), capture_output=True
    )
    assert r.returncode == -signal.SIGKILL, r.stderr[-800:]
    store = PostgresStore(spec)  # what the dead session wrote and never committed is invisible from here on
    after = store.open_run(ref)
    assert queued(after) and read_submission(store, ref.removeprefix("pg:")).queued, after.state()
    res = run_flow(["resume", ref, "--store", spec], tmp_path, env)
    assert "tampered" not in res.stdout + res.stderr, res.stderr
