"""The PostgreSQL run store on a real server (SPEC §5, §18): fencing in SQL, the lease race, migrations, export.

The server is Debian's, started by the tests as the dedicated `postgres` user on loopback (tests/support/pg.py); each
test gets a schema of its own. The contract every store keeps is tests/unit/store/test_run_store_contract.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

import psycopg
import pytest
from typer.testing import CliRunner

from openadapt_flow.cli.app import app
from openadapt_flow.errors import RefusedError, RunDirError
from openadapt_flow.runtime.start.runref import open_ref
from openadapt_flow.store import PostgresLease, PostgresRun, PostgresStore, load_journal
from openadapt_flow.store import pg_code_version as code_version
from openadapt_flow.store import pg_migrations as migrations
from openadapt_flow.store.journal import GENESIS, make_record
from openadapt_flow.store.keys import load_key
from openadapt_flow.store.lease import LeaseLost
from openadapt_flow.store.select import open_store
from tests.e2e.test_durable_stores_cli import gated_bundle
from tests.support.cli import flow_env, run_flow
from tests.support.demo_invoices import BUNDLE, FIXTURES, PARAMS, invoice_rows
from tests.support.pg import PgServer, pg_server, store_spec  # noqa: F401 — pg_server: the session's server
from tests.support.run_records import Tally, check_run_dir
from tests.support.xserver import wait_until

pytestmark = pytest.mark.timeout(120)
KEY = b"k" * 64


@pytest.fixture
def spec(pg_server: PgServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    return store_spec(pg_server, f"s_{tmp_path.name.lower()}", monkeypatch)


def started(store: PostgresStore, name: str = "r1") -> PostgresRun:
    run = store.create_run(name)
    run.write_manifest({"run_id": f"run-{name}", "durable": True, "config": {}})
    return run


def expire(spec: str, run: PostgresRun) -> None:
    """The holder stalled past its TTL (SIGSTOP, a partition): its lease row's expiry is in the past."""
    with psycopg.connect(spec, autocommit=True) as c:
        c.execute("UPDATE flow_leases SET expires_at = now() - interval '1 second' WHERE run = %s", (run.id(),))


def journal_types(run: PostgresRun) -> list[str]:
    return [r["type"] for r in run.load_journal(KEY).records]


# --- fencing: action_dispatched commits only under the generation the writer read ---


def test_a_stale_generation_cannot_dispatch_and_its_journal_stays_as_the_new_owner_left_it(spec):
    a_store, b_store = PostgresStore(spec), PostgresStore(spec)  # two processes' views of one store
    a_run = started(a_store)
    a_lease = a_run.lease(30).acquire()
    a_journal = a_run.new_journal(KEY)
    a_journal.append("step_started", "save", {"index": 0})
    a_journal.append("action_dispatched", "save", {"lease_generation": a_lease.generation})  # held: committed
    expire(spec, a_run)
    with pytest.raises(LeaseLost, match="expired"):
        a_lease.fence()
    with pytest.raises(LeaseLost, match="no longer held"):  # expired and not yet taken: still no input
        a_journal.append("action_dispatched", "save", {"lease_generation": a_lease.generation})
    b_run = b_store.open_run("pg:r1")
    b_lease = b_run.lease(30).acquire()  # the stalled holder still has its session (and its lock): taken by expiry
    try:
        assert b_lease.generation == 2
        b_journal, records = b_run.open_journal(KEY)
        b_journal.append("action_dispatched", "save", {"lease_generation": 2})
        with pytest.raises(LeaseLost, match="generation 1 was replaced"):
            a_lease.fence()
        with pytest.raises(LeaseLost):  # the stale writer's next record of any type: its seq is taken
            a_journal.append("note", "save")
        assert journal_types(b_run) == ["step_started", "action_dispatched", "action_dispatched"]
    finally:
        b_lease.release()
        a_lease.release()


def test_a_takeover_waits_for_a_dispatch_in_flight_and_then_reads_it(spec):
    """The fencing check share-locks the lease row in the dispatch's own transaction: a takeover of an expired lease
    cannot slip between the check and the commit — it waits, and the journal it then reads has the dispatch."""
    run = started(PostgresStore(spec))
    lease = run.lease(1.0).acquire()
    rec, line = make_record(KEY, 1, GENESIS, "action_dispatched", "save", {"lease_generation": lease.generation})
    with psycopg.connect(spec) as inflight:  # not autocommit: the dispatch's transaction stays open
        assert inflight.execute(
            "SELECT flow_append(%s, 1, 'action_dispatched', 'save', %s, true, true, %s, %s)",
            (run.id(), line, lease.generation, lease.holder),
        ).fetchone() == (True,)
        with psycopg.connect(spec, autocommit=True) as watch:
            wait_until(
                lambda: watch.execute("SELECT expires_at <= now() FROM flow_leases").fetchone() == (True,),
                10,
                "the holder's lease to expire (no heartbeat)",
            )
            taken: list[PostgresLease] = []
            taker = threading.Thread(
                target=lambda: taken.append(PostgresStore(spec).open_run("pg:r1").lease(30).acquire())
            )
            taker.start()
            wait_until(
                lambda: (
                    watch.execute(
                        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND "
                        "query LIKE '%%INSERT INTO flow_leases%%'"
                    ).fetchone()
                    == (1,)
                ),
                10,
                "the takeover to wait on the dispatch's lock",
            )
            assert taken == []
            inflight.commit()
            taker.join(30)
    assert [t.generation for t in taken] == [2] and [r["hash"] for r in run.load_journal(KEY).records] == [rec["hash"]]
    taken[0].release()
    lease.release()


def test_stores_in_two_schemas_of_one_database_lock_their_runs_apart(pg_server, spec, tmp_path, monkeypatch):
    """Advisory locks are per database: each store's owner locks live in a namespace of its own."""
    other = store_spec(pg_server, f"o_{tmp_path.name.lower()}", monkeypatch)
    runs = [started(PostgresStore(s)) for s in (spec, other)]
    assert runs[0].id() == runs[1].id()  # the same row id in each schema
    leases = [run.lease(30).acquire() for run in runs]
    try:
        assert [lease.generation for lease in leases] == [1, 1]
    finally:
        for lease in leases:
            lease.release()


def test_a_released_lease_admits_no_dispatch_from_a_writer_that_holds_none(spec):
    store = PostgresStore(spec)
    run = started(store)
    journal = run.new_journal(KEY)
    journal.append("action_dispatched", "a")  # no lease was ever taken on this run: nobody to be fenced by
    run.lease(30).acquire().release()
    with pytest.raises(LeaseLost):
        journal.append("action_dispatched", "b")
    assert journal_types(run) == ["action_dispatched"]


def test_two_writers_race_for_an_expired_lease_and_exactly_one_wins(spec):
    stores = [PostgresStore(spec) for _ in range(4)]
    run = started(stores[0])
    holder = run.lease(30).acquire()
    winners = [holder]
    for round_ in range(5):
        expire(spec, run)
        gate = threading.Barrier(len(stores))
        won: list[int] = []
        lost: list[str] = []

        def take(store: PostgresStore) -> None:
            lease = store.open_run("pg:r1").lease(30)
            gate.wait()
            try:
                won.append(lease.acquire().generation)
                winners.append(lease)
            except RefusedError as e:
                lost.append(str(e))

        threads = [threading.Thread(target=take, args=(s,)) for s in stores]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert len(won) == 1 and len(lost) == len(stores) - 1, (round_, won, lost)
        assert won[0] == round_ + 2 and run.lease_info().generation == won[0]
    with pytest.raises(LeaseLost):
        holder.fence()
    for lease in winners:
        lease.release()


def test_a_live_holder_is_never_taken_over_and_its_heartbeat_keeps_it(spec):
    store = PostgresStore(spec)
    run = started(store)
    lease = run.lease(0.6).acquire()
    lease.start_heartbeat()
    try:
        first = run.lease_info().heartbeat_epoch
        wait_until(lambda: run.lease_info().heartbeat_epoch > first, 10, "a heartbeat")
        with pytest.raises(RefusedError, match="owned by a live process"):
            PostgresStore(spec).open_run("pg:r1").lease(0.6).acquire(wait_s=1.0)  # > its TTL: renewed meanwhile
        lease.fence()
    finally:
        lease.release()


# --- migrations ---


def test_migrate_applies_the_schema_once_and_a_store_is_refused_until_then(pg_server, tmp_path, monkeypatch):
    spec = store_spec(pg_server, f"m_{tmp_path.name.lower()}", monkeypatch, migrated=False)
    env = flow_env(tmp_path)
    r = run_flow(["runs", "--store", spec], tmp_path, env=env)
    assert r.returncode == 6 and "flow store migrate" in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr
    r = run_flow(["store", "migrate", "--store", spec, "--json"], tmp_path, env=env)
    applied = json.loads(r.stdout)["applied"] if r.returncode == 0 else None
    assert applied == [f"{m.version:04d}_{m.name}" for m in migrations()], r.stderr  # every shipped one, in order
    assert applied[:2] == ["0001_run_store", "0002_operators"]
    r = run_flow(["store", "migrate", "--store", spec, "--json"], tmp_path, env=env)  # idempotent
    assert r.returncode == 0 and json.loads(r.stdout) == {
        "store": spec,
        "schema_version": code_version(),
        "applied": [],
    }
    assert run_flow(["runs", "--store", spec, "--json"], tmp_path, env=env).stdout.strip() == "[]"


def test_a_store_newer_than_the_code_is_refused_never_half_read(spec, tmp_path):
    with psycopg.connect(spec, autocommit=True) as c:
        c.execute("INSERT INTO flow_schema (version, name) VALUES (%s, 'from_the_future')", (code_version() + 1,))
    env = flow_env(tmp_path)
    for args in (["runs", "--store", spec], ["store", "migrate", "--store", spec], ["status", "r1", "--store", spec]):
        r = run_flow(args, tmp_path, env=env)
        assert r.returncode == 6 and "newer than this openadapt-flow" in r.stderr and "Traceback" not in r.stderr, (
            args,
            r.stderr,
        )


def test_a_password_in_the_store_url_is_refused_without_showing_it(pg_server, tmp_path):
    url = pg_server.dsn()  # postgresql://flow:<password>@…
    r = run_flow(["runs", "--store", url], tmp_path, env=flow_env(tmp_path))
    assert r.returncode == 2 and "PGPASSWORD" in r.stderr and pg_server.password not in r.stderr + r.stdout


def test_a_store_that_does_not_answer_is_the_environment_exit_75(tmp_path):
    """Nothing listens on the port: a retry may succeed, so exit 75 (EX_TEMPFAIL), not 2 (fix your command)."""
    r = run_flow(["runs", "--store", "postgresql://flow@127.0.0.1:1/postgres"], tmp_path, env=flow_env(tmp_path))
    assert r.returncode == 75 and "cannot connect (Connection refused)" in r.stderr and "retry later" in r.stderr, (
        r.stderr
    )
    assert len(r.stderr.splitlines()) == 1, r.stderr


def test_a_store_that_answers_no_is_the_input_exit_2(pg_server, tmp_path):
    """The server answers that the database or the password is wrong: retrying cannot fix it, so exit 2."""
    env = {**flow_env(tmp_path), "PGPASSWORD": pg_server.password}
    for spec, why in (
        (f"postgresql://flow@127.0.0.1:{pg_server.port}/no_such_db", "no_such_db"),
        (f"postgresql://no_such_role@127.0.0.1:{pg_server.port}/postgres", "no_such_role"),
    ):
        r = run_flow(["runs", "--store", spec], tmp_path, env=env)
        assert r.returncode == 2 and "cannot connect" in r.stderr and why in r.stderr, (spec, r.stderr)
        assert len(r.stderr.splitlines()) == 1 and "retry later" not in r.stderr, r.stderr


# --- export: a stored run as a §7 run directory ---


def test_export_writes_a_run_directory_every_run_dir_tool_reads(spec, tmp_path, monkeypatch):
    db = tmp_path / "sor.db"
    for var, value in {
        "FLOW_KEY_FILE": tmp_path / "install.key",
        "FLOW_DECISION_KEY_FILE": tmp_path / "decision.key",
        "FLOW_STATE_DIR": tmp_path / "state",
        "FLOW_FIXTURE_DB": db,
        "DEMO_DB_DSN": f"sqlite:///{db}",
    }.items():
        monkeypatch.setenv(var, str(value))
    monkeypatch.chdir(tmp_path)
    cli = CliRunner()
    r = cli.invoke(
        app,
        [
            "replay",
            str(BUNDLE),
            "--url",
            f"fixture:{FIXTURES / 'normal'}",
            "--durable",
            "--store",
            spec,
            "--run-dir",
            "pg:done",
            "--json",
            *PARAMS,
        ],
    )
    assert r.exit_code == 0, r.output
    assert invoice_rows(db) == [("ACME Corp", 1250.5)]
    run = PostgresStore(spec).open_run("pg:done")
    out = tmp_path / "exported"
    r = cli.invoke(app, ["export", run.run_id(), "--store", spec, "--to", str(out), "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["files"] > 5, r.output
    assert (out / "report.json").read_text() == run.doc_text("report")  # byte-identical
    assert (out / "REPORT.md").read_bytes() == run.get_artifact("REPORT.md")
    records = load_journal(out / "journal.jsonl", load_key(create=False)).records  # the same verifiable chain
    assert [r["hash"] for r in records] == [r["hash"] for r in run.load_journal(load_key(create=False)).records]
    assert {p.name for p in (out / "frames").iterdir()} == run.frame_names()
    assert (out / "bundle" / "flow.yaml").read_bytes() == (BUNDLE / "flow.yaml").read_bytes()
    tally = Tally()
    assert check_run_dir(out, [load_key(create=False)], [], tally) == [] and tally.files >= 4
    r = run_flow(
        ["status", str(out), "--json"], tmp_path, env=flow_env(tmp_path, FLOW_KEY_FILE=str(tmp_path / "install.key"))
    )
    assert r.returncode == 0 and json.loads(r.stdout)["state"] == "COMPLETED", r.stderr
    r = cli.invoke(app, ["export", "pg:done", "--store", spec, "--to", str(out)])
    assert r.exit_code == 2 and "already holds a run" in r.output  # never over a run directory


def test_an_exported_run_directory_is_read_but_never_resumed_or_decided_on(spec, tmp_path, monkeypatch):
    """A paused run exported is a copy: acting on it would run its remaining steps in two places (the copy and the
    store). Every command that acts refuses it in one line (exit 6) naming the store; status and report read it."""
    db = tmp_path / "sor.db"
    env = flow_env(
        tmp_path,
        FLOW_KEY_FILE=str(tmp_path / "install.key"),
        FLOW_DECISION_KEY_FILE=str(tmp_path / "decision.key"),
        FLOW_STATE_DIR=str(tmp_path / "state"),
        FLOW_FIXTURE_DB=str(db),
        DEMO_DB_DSN=f"sqlite:///{db}",
        PGPASSWORD=os.environ["PGPASSWORD"],
    )
    r = run_flow(
        [
            "replay",
            str(gated_bundle(tmp_path)),
            "--url",
            f"fixture:{FIXTURES / 'normal'}",
            "--store",
            spec,
            "--run-dir",
            "pg:gated",
            "--json",
            *PARAMS,
        ],
        tmp_path,
        env,
    )
    assert r.returncode == 3, r.stderr
    out = tmp_path / "copy"
    assert run_flow(["export", "pg:gated", "--store", spec, "--to", str(out)], tmp_path, env).returncode == 0
    for args in (
        ["approve", str(out), "--decision", "continue", "--operator", "ops"],
        ["resume", str(out)],
        ["answer", str(out), "yes"],
        ["signal", str(out), "go"],
        ["approve", str(out), "--decision", "continue", "--operator", "ops", "--decision", "reject"],
    ):
        r = run_flow(args, tmp_path, env)
        assert r.returncode == 6 and len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)
        assert "an export of pg:gated --store postgresql://" in r.stderr and "refusing" in r.stderr, r.stderr
    r = run_flow(["status", str(out), "--json"], tmp_path, env)
    assert r.returncode == 0 and json.loads(r.stdout)["state"] == "PAUSED", r.stderr
    assert run_flow(["report", str(out)], tmp_path, env).returncode == 0
    assert invoice_rows(db) == []  # nothing ran from the copy
    assert (
        run_flow(
            ["approve", "pg:gated", "--store", spec, "--decision", "continue", "--operator", "ops"], tmp_path, env
        ).returncode
        == 0
    )
    assert run_flow(["resume", "pg:gated", "--store", spec], tmp_path, env).returncode == 0  # the run, in its store
    assert invoice_rows(db) == [("ACME Corp", 1250.5)]


# --- references: `pg:NAME` names a run of the store this process opened ---


def test_a_pg_reference_resolves_to_the_store_this_process_opened(spec):
    opened = open_store(spec)
    assert open_store(spec) is opened and isinstance(opened, PostgresStore)
    started(opened, "ref1")
    assert open_ref("pg:ref1").manifest()["run_id"] == "run-ref1"  # what RunOutcome.run_dir and parent_run carry
    with pytest.raises(RunDirError, match="run not found"):
        open_ref("pg:nope")


def test_the_worker_resumes_an_approved_run_of_the_store(spec, tmp_path, monkeypatch):
    db = tmp_path / "sor.db"
    for var, value in {
        "FLOW_KEY_FILE": tmp_path / "install.key",
        "FLOW_DECISION_KEY_FILE": tmp_path / "decision.key",
        "FLOW_STATE_DIR": tmp_path / "state",
        "FLOW_FIXTURE_DB": db,
        "DEMO_DB_DSN": f"sqlite:///{db}",
    }.items():
        monkeypatch.setenv(var, str(value))
    monkeypatch.chdir(tmp_path)
    cli = CliRunner()
    r = cli.invoke(
        app,
        [
            "replay",
            str(gated_bundle(tmp_path)),
            "--url",
            f"fixture:{FIXTURES / 'normal'}",
            "--store",
            spec,
            "--json",
            *PARAMS,
        ],
    )
    assert r.exit_code == 3, r.output
    ref = json.loads(r.output)["run_dir"]
    assert ref.startswith("pg:replay-")
    out = cli.invoke(app, ["worker", "--store", spec, "--once"]).output  # paused, undecided: not due
    assert out.startswith("worker: scanned 1 run(s) in postgresql://") and "(1 PAUSED); resumed none" in out, out
    assert (
        cli.invoke(app, ["approve", ref, "--store", spec, "--decision", "continue", "--operator", "ops"]).exit_code == 0
    )
    r = cli.invoke(app, ["worker", "--store", spec, "--once"])
    assert f"{ref}\tCOMPLETED" in r.output, r.output
    assert invoice_rows(db) == [("ACME Corp", 1250.5)]
    assert [run.ref for run in PostgresStore(spec).list_runs(state="COMPLETED")] == [ref]


# --- blob GC: `flow store gc` deletes the blobs no run references, and only those ---


def _blobs(spec: str) -> dict[str, bool]:
    """Every blob's digest -> whether an artifact references it."""
    with psycopg.connect(spec, autocommit=True) as c:
        rows = c.execute(
            "SELECT b.digest, EXISTS (SELECT 1 FROM flow_artifacts a WHERE a.digest = b.digest) FROM flow_blobs b"
        ).fetchall()
    return {d: ref for d, ref in rows}


def _age(spec: str, seconds: int) -> None:
    with psycopg.connect(spec, autocommit=True) as c:
        c.execute("UPDATE flow_blobs SET touched_at = now() - make_interval(secs => %s)", (seconds,))


def test_gc_deletes_exactly_the_unreferenced_blobs_and_never_one_a_write_is_referencing(spec, tmp_path):
    store = PostgresStore(spec)
    kept, gone = started(store, "kept"), started(store, "gone")
    kept.put_artifact("frames/a.png", b"shared")  # referenced by both runs: stays while one does
    gone.put_artifact("frames/a.png", b"shared")
    kept.put_artifact("REPORT.md", b"old report")  # replaced below: its old blob is garbage
    kept.put_artifact("REPORT.md", b"new report")
    gone.put_artifact("frames/b.png", b"only gone's")
    gone.discard()  # its rows cascade; its blobs are left to gc
    kept.put_artifact("frames/c.png", b"reused later")
    kept.remove_artifacts("frames/c.png")
    assert sorted(_blobs(spec).values()) == [False, False, False, True, True]
    cli = CliRunner()
    r = cli.invoke(app, ["store", "gc", "--store", spec, "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["deleted_blobs"] == 0, r.output  # all younger than the hour
    _age(spec, 7200)
    # a run references an old unreferenced blob again, its transaction still open while gc runs: gc must not take it
    writer = psycopg.connect(spec)
    with writer.transaction():
        writer.execute(  # put_artifact's statement, on a transaction held open
            "WITH blob AS (INSERT INTO flow_blobs (digest, size, data) VALUES (%(d)s, 12, %(b)s) "
            "ON CONFLICT (digest) DO UPDATE SET touched_at = now()) INSERT INTO flow_artifacts (run, name, digest) "
            "VALUES (%(run)s, 'frames/c.png', %(d)s)",
            {"d": "sha256:" + hashlib.sha256(b"reused later").hexdigest(), "b": b"reused later", "run": kept.id()},
        )
        result: list[str] = []
        gc = threading.Thread(
            target=lambda: result.append(cli.invoke(app, ["store", "gc", "--store", spec, "--json"]).output)
        )
        gc.start()
        wait_until(lambda: _waiting_on_a_lock(spec), 20, "gc waiting on the writer's row lock")
    writer.close()
    gc.join(30)
    assert json.loads(result[0])["deleted_blobs"] == 2, result  # the replaced report and gone's own frame
    assert sorted(_blobs(spec).values()) == [True, True, True]
    assert kept.get_artifact("frames/c.png") == b"reused later" and kept.get_artifact("frames/a.png") == b"shared"
    assert kept.get_artifact("REPORT.md") == b"new report"
    r = cli.invoke(app, ["store", "gc", "--store", spec, "--min-age", "0"])
    assert r.exit_code == 0 and "deleted 0 unreferenced blob(s)" in r.output, r.output  # every blob left is referenced


def _waiting_on_a_lock(spec: str) -> bool:
    with psycopg.connect(spec, autocommit=True) as c:
        return c.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%DELETE FROM flow_blobs%'"
        ).fetchone() == (1,)
