"""The fleet on a real PostgreSQL (SPEC §19): fleet workers (procrastinate) over served fixture desktops, each with
one shared system of record; runs submitted to the store all complete exactly once, and a killed worker's run is
finalised INTERRUPTED by another worker's reconciler and completed elsewhere with exactly one row."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.runtime.fleet.claim import START_TRIES
from openadapt_flow.runtime.fleet.desks import Desks, NoDesktopFree
from openadapt_flow.runtime.fleet.jobs import DesktopSilent
from openadapt_flow.runtime.fleet.jobs import Fleet as FleetTasks
from openadapt_flow.runtime.fleet.submit import submit
from openadapt_flow.runtime.fleet.targets import load_targets
from tests.support.cli import REPO, flow_env, run_flow
from tests.support.demo_invoices import BUNDLE, invoice_rows
from tests.support.pg import PgServer, pg_server, store_spec  # noqa: F401 — pg_server: the session's server
from tests.support.stopping import stop_procs
from tests.support.xserver import free_port, wait_until

pytestmark = pytest.mark.timeout(180)
DESKS = 4


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


class Fleet:
    def __init__(self, tmp: Path, spec: str, password: str, silent: int = 0) -> None:
        """DESKS fixture desktops, and `silent` more that never answer (nothing listens at their port)."""
        self.tmp, self.spec = tmp, spec
        self.db = tmp / "app.db"  # the back office's system of record: every desktop's app saves into it
        self.env = flow_env(tmp, PGPASSWORD=password, DEMO_DB_DSN=f"sqlite:///{self.db}")
        self.procs: list[subprocess.Popen[bytes]] = []
        ports = [free_port() for _ in range(DESKS)]
        for port in ports:
            self._spawn(
                [
                    "fixture",
                    "serve",
                    str(REPO / "fixtures" / "normal"),
                    "--keep-state",
                    "--port",
                    str(port),
                    "--db",
                    str(self.db),
                ],
                f"serve-{port}",
            )
        for port in ports:
            wait_until(lambda: _listening(port), 30, f"fixture desktop on {port}")
        lines = [
            f'  - {{name: desk{i}, labels: [invoices], backend: {{kind: vnc, url: "vnc://127.0.0.1:{p}"}}}}'
            for i, p in enumerate([free_port() for _ in range(silent)] + ports)
        ]  # the silent ones first
        self.targets = tmp / "targets.yaml"
        self.targets.write_text("schema: openadapt-flow/targets@1\ntargets:\n" + "\n".join(lines) + "\n")
        (tmp / "deploy.yaml").write_text("schema: openadapt-flow/config@1\nruntime: {lease_ttl_s: 5}\n")

    def _spawn(self, args: list[str], log: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        out = open(self.tmp / f"{log}.log", "wb")
        proc = subprocess.Popen(
            [sys.executable, "-m", "openadapt_flow", *args],
            cwd=self.tmp,
            env={**self.env, **(env or {})},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        self.procs.append(proc)
        return proc

    def worker(self, name: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        return self._spawn(
            [
                "worker",
                "--store",
                self.spec,
                "--targets",
                str(self.targets),
                "--config",
                str(self.tmp / "deploy.yaml"),
                "--name",
                name,
            ],
            name,
            env,
        )

    def states(self, names: list[str]) -> dict[str, str | None]:
        with psycopg.connect(self.spec, autocommit=True, password=self.env["PGPASSWORD"]) as c:
            rows = c.execute("SELECT name, state FROM flow_runs WHERE name = ANY(%s)", (names,)).fetchall()
        return {n: s for n, s in rows}

    def rows(self) -> list[tuple[str, float]]:
        return sorted(invoice_rows(self.db)) if self.db.exists() else []

    def close(self) -> None:
        stop_procs(self.procs)


@pytest.fixture
def fleet(
    pg_server: PgServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[Fleet]:
    spec = store_spec(pg_server, f"f_{tmp_path.name.lower()}", monkeypatch)
    f = Fleet(tmp_path, spec, pg_server.password, getattr(request, "param", 0))
    try:
        yield f
    finally:
        f.close()


def _submit(fleet: Fleet, n: int, bundle: Path = BUNDLE) -> list[str]:
    """n runs of the recorded invoice (the fixture desktops show what was recorded: the same params every time)."""
    return [
        submit(fleet.spec, bundle, {"vendor": "ACME Corp", "amount": "1250.50"}, "invoices").removeprefix("pg:")
        for _ in range(n)
    ]


def _without_effect(tmp: Path) -> Path:
    """The demo bundle without its `save` effect probe: its query counts (vendor, amount) rows, and concurrent runs of
    the one recorded invoice all add that row, so one run's "increase by 1" would see another's. Exactly-once is then
    checked by the journals (one `save` dispatch each) and the row count."""
    out = tmp / "bundle"
    shutil.copytree(BUNDLE, out)
    flow = out / "flow.yaml"
    text = flow.read_text()
    start = text.index("  effect:\n")
    end = text.index("  expect:\n", start)
    flow.write_text(text[:start] + text[end:])
    return out


# a worker that freezes itself (SIGSTOP) right after journaling `amount`'s step_verified: mid-run, between two steps,
# no input in flight, its write (`save`) still to send — a host frozen at an exact place, whatever the machine's speed
FREEZE_BETWEEN_STEPS = {"FLOW_CRASH_AT": "after:step_verified@amount", "FLOW_CRASH_SIGNAL": "STOP"}


def _frozen_between_steps(fleet: Fleet, name: str, worker: subprocess.Popen[bytes]) -> bool:
    """The worker started with FREEZE_BETWEEN_STEPS has stopped itself there: its run verified a step after its last
    dispatch and has not sent its save."""
    try:
        state = Path(f"/proc/{worker.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    if state != "T":
        return False
    types = _journal_types(fleet, name)
    dispatched = [i for i, t in enumerate(types) if t == "action_dispatched"]
    verified = [i for i, t in enumerate(types) if t == "step_verified"]
    assert dispatched and verified and verified[-1] > dispatched[-1] and not _saves(fleet, [name]).get(name), types
    return True


def _journal_types(fleet: Fleet, name: str) -> list[str]:
    with psycopg.connect(fleet.spec, autocommit=True, password=fleet.env["PGPASSWORD"]) as c:
        rows = c.execute(
            "SELECT j.type FROM flow_journal j JOIN flow_runs r ON r.id = j.run WHERE r.name = %s ORDER BY j.seq",
            (name,),
        ).fetchall()
    return [r[0] for r in rows]


def _saves(fleet: Fleet, names: list[str]) -> dict[str, int]:
    """How many times each run dispatched its write (the `save` click), from its journal rows."""
    with psycopg.connect(fleet.spec, autocommit=True, password=fleet.env["PGPASSWORD"]) as c:
        rows = c.execute(
            "SELECT r.name, count(j.seq) FROM flow_runs r LEFT JOIN flow_journal j ON j.run = r.id "
            "AND j.type = 'action_dispatched' AND j.step = 'save' WHERE r.name = ANY(%s) GROUP BY r.name",
            (names,),
        ).fetchall()
    return {n: int(k) for n, k in rows}


def _all(fleet: Fleet, names: list[str], state: str) -> bool:
    states = fleet.states(names)
    return len(states) == len(names) and set(states.values()) == {state}


def _flow(fleet: Fleet, *args: str) -> subprocess.CompletedProcess[str]:
    return run_flow([*args, "--store", fleet.spec], fleet.tmp, fleet.env)


@pytest.mark.parametrize("fleet", [1], indirect=True, ids=["and a silent fifth"])
def test_forty_submitted_runs_all_complete_exactly_once_over_three_workers_and_four_desktops(fleet):
    """...and a fifth desktop, first in the targets file, that never answers: the starts that reach it are started
    again elsewhere (it rests, for every worker), and no run is lost to it."""
    names = _submit(fleet, 40, _without_effect(fleet.tmp))
    # submitted runs are runs of the store at once, PENDING, before any worker exists
    first = json.loads(_flow(fleet, "status", f"pg:{names[0]}", "--json").stdout)
    assert first["state"] == "PENDING" and first["run_id"].startswith("run-"), first
    listed = {r["run_dir"]: r["state"] for r in json.loads(_flow(fleet, "runs", "--json").stdout)}
    assert listed == {f"pg:{n}": "PENDING" for n in names}
    waited = _flow(fleet, "wait", first["run_id"], "--timeout", "0.5")
    assert waited.returncode == 124 and "still PENDING" in waited.stderr, waited.stderr
    for w in ("w1", "w2", "w3"):
        fleet.worker(w)
    assert _flow(fleet, "wait", first["run_id"], "--timeout", "150").returncode == 0  # a worker started that very run
    try:
        wait_until(lambda: _all(fleet, names, "COMPLETED"), 150, "every submitted run COMPLETED")
    except TimeoutError:
        raise AssertionError(_stuck(fleet, names)) from None
    assert _saves(fleet, names) == {n: 1 for n in names}
    assert fleet.rows() == [("ACME Corp", 1250.5)] * len(names)
    assert _sql(fleet, "SELECT count(*) FROM flow_runs") == [(40,)]  # started in place: no second row for any run
    [(tried, failures)] = _sql(
        fleet, "SELECT (SELECT sum(start_tries) FROM flow_submissions), failures FROM flow_desk_rest"
    )
    assert 1 <= tried == failures, (tried, failures)  # the silent desktop was tried, and rested after each try


def _stuck(fleet: Fleet, names: list[str]) -> str:
    """What a run that did not complete was doing: its state, its last records and its jobs, and the workers' last
    log lines (a timeout alone says nothing about why)."""
    lines = []
    for name, state in sorted(fleet.states(names).items()):
        if state != "COMPLETED":
            jobs = _sql(
                fleet, "SELECT task_name, status, attempts FROM procrastinate_jobs WHERE args->>'name' = %s", name
            )
            status = json.loads(_flow(fleet, "status", f"pg:{name}", "--json").stdout or "{}")
            lines.append(
                f"{name}: {state} ({json.dumps(status)[:400]}), last records {_journal_types(fleet, name)[-4:]}, jobs {jobs}"
            )
    for log in sorted(fleet.tmp.glob("w*.log")):
        lines.append(f"--- {log.name}: " + " | ".join(log.read_text(errors="replace").splitlines()[-8:]))
    return "\n".join(lines)


def _sql(fleet: Fleet, query: str, *args: object) -> list[tuple]:
    with psycopg.connect(fleet.spec, autocommit=True, password=fleet.env["PGPASSWORD"]) as c:
        return c.execute(query, args).fetchall()  # type: ignore[arg-type]


@pytest.mark.parametrize("after", ["pruned", "same_name"])
def test_a_killed_workers_run_is_finalised_interrupted_and_completed_once_by_another(fleet, after):
    """procrastinate's own recovery leaves the dead worker's job in `doing` when its worker row is pruned, or when the
    worker comes back under the same name: the run's lease in our store is what the reconciler goes by. And the
    reconcile task's own job may stall the same way (its worker died while reconciling): that must not stop the next."""
    [name] = _submit(fleet, 1)
    _sql(
        fleet,
        "INSERT INTO procrastinate_jobs (queue_name, task_name, queueing_lock, args, status) VALUES "
        "('flow', 'flow.reconcile', 'reconcile', '{\"timestamp\": 0}', 'doing') RETURNING id",
    )
    doomed = fleet.worker("w1", FREEZE_BETWEEN_STEPS)
    wait_until(lambda: _frozen_between_steps(fleet, name, doomed), 60, "the worker frozen mid-run, between two steps")
    doomed.send_signal(signal.SIGKILL)
    doomed.wait(10)
    assert fleet.states([name]) == {name: "RUNNING"}  # nobody told the store: its owner just vanished
    [(job, worker_id)] = _sql(fleet, "SELECT id, worker_id FROM procrastinate_jobs WHERE task_name = 'flow.start'")
    if after == "pruned":
        _sql(fleet, "DELETE FROM procrastinate_workers WHERE id = %s RETURNING id", worker_id)
        fleet.worker("w2")
    else:
        fleet.worker("w1")
    fleet.worker("w3")
    wait_until(lambda: _all(fleet, [name], "COMPLETED"), 90, "the killed worker's run COMPLETED elsewhere")
    types = _journal_types(fleet, name)
    assert types.count("interrupted") == 1 and "run_resumed" in types[types.index("interrupted") :], types
    assert _saves(fleet, [name]) == {name: 1}
    assert fleet.rows() == [("ACME Corp", 1250.5)]
    assert _sql(fleet, "SELECT status FROM procrastinate_jobs WHERE id = %s", job) == [("doing",)]  # the hole is real


def _dispatch_generations(fleet: Fleet, name: str) -> list[tuple[str, int | None]]:
    """Every `interrupted` and `action_dispatched` record in order, the latter with its lease generation."""
    rows = _sql(
        fleet,
        "SELECT j.type, j.line FROM flow_journal j JOIN flow_runs r ON r.id = j.run WHERE r.name = %s "
        "AND j.type IN ('interrupted', 'action_dispatched') ORDER BY j.seq",
        name,
    )
    return [(t, json.loads(bytes(line))["data"].get("lease_generation")) for t, line in rows]


def test_a_worker_stopped_past_its_lease_is_fenced_and_the_run_completes_once_elsewhere(fleet):
    [name] = _submit(fleet, 1)
    stalled = fleet.worker("w1", FREEZE_BETWEEN_STEPS)
    wait_until(lambda: _frozen_between_steps(fleet, name, stalled), 60, "the worker frozen mid-run, between two steps")
    fleet.worker("w2")  # its reconciler sees the lease expire (5 s without a heartbeat) and finalises the run
    wait_until(
        lambda: "interrupted" in _journal_types(fleet, name), 60, "the stalled worker's run finalised INTERRUPTED"
    )
    stalled.send_signal(signal.SIGCONT)  # it wakes up believing it owns the run; it still holds its desktop
    wait_until(lambda: _all(fleet, [name], "COMPLETED"), 90, "the run COMPLETED by the other worker")
    records = _dispatch_generations(fleet, name)
    cut = records.index(("interrupted", None))
    before = {g for _, g in records[:cut]}
    after = {g for t, g in records[cut + 1 :] if t == "action_dispatched"}
    assert len(before) == 1 and after and min(after) > max(before), (
        records
    )  # not one input from the stalled worker after
    assert _saves(fleet, [name]) == {name: 1}
    assert fleet.rows() == [("ACME Corp", 1250.5)]


def test_submit_prints_the_run_id_and_bad_input_is_one_line_exit_2(pg_server, tmp_path, monkeypatch):
    spec = store_spec(pg_server, f"f_{tmp_path.name.lower()}", monkeypatch)
    env = flow_env(tmp_path, PGPASSWORD=pg_server.password)
    r = run_flow(
        [
            "submit",
            str(BUNDLE),
            "--store",
            spec,
            "--param",
            "vendor=ACME Corp",
            "--param",
            "amount=1250.50",
            "--target",
            "invoices",
            "--json",
        ],
        tmp_path,
        env,
    )
    assert r.returncode == 0, r.stderr
    ref = json.loads(r.stdout)["run_id"]
    assert ref.startswith("pg:fleet-")
    with psycopg.connect(spec, autocommit=True, password=pg_server.password) as c:
        assert c.execute(
            "SELECT s.label, r.state, r.manifest::jsonb->'params' FROM flow_submissions s JOIN flow_runs r "
            "ON r.id = s.run WHERE r.name = %s",
            (ref[3:],),
        ).fetchall() == [("invoices", "PENDING", {"vendor": "ACME Corp", "amount": 1250.5})]
        assert c.execute("SELECT task_name, status, args FROM procrastinate_jobs").fetchall() == [
            ("flow.start", "todo", {"name": ref[3:]})
        ]  # enqueued with the run, by the submission's insert
    r = run_flow(["status", ref, "--store", spec, "--json"], tmp_path, env)
    assert json.loads(r.stdout)["state"] == "PENDING" and json.loads(r.stdout)["bundle"] == "demo-invoice", r.stdout
    (tmp_path / "dup.yaml").write_text(
        "schema: openadapt-flow/targets@1\ntargets:\n" + '  - {name: a, backend: {url: "vnc://127.0.0.1:5901"}}\n' * 2
    )
    (tmp_path / "old.yaml").write_text(
        'schema: openadapt-flow/targets@0\ntargets: [{name: a, backend: {url: "vnc://h"}}]\n'
    )
    bad = {
        ("submit", str(BUNDLE), "--store", str(tmp_path / "runs")): "needs the PostgreSQL store",
        ("submit", str(tmp_path / "nope"), "--store", spec): "nope",
        ("worker", "--store", spec, "--targets", str(tmp_path / "dup.yaml")): "unique",
        ("worker", "--store", spec, "--targets", str(tmp_path / "old.yaml")): "schema",
        ("worker", "--targets", str(tmp_path / "dup.yaml")): "needs --store",
    }
    for args, words in bad.items():
        r = run_flow(list(args), tmp_path, env)
        assert r.returncode == 2 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)


def test_a_store_not_migrated_for_the_fleet_is_refused_in_one_line_exit_6(pg_server, tmp_path, monkeypatch):
    """The fleet's tables and procrastinate's schema come only from `flow store migrate` (migration 0003, with the
    procrastinate schema version it applied pinned): never created behind the operator's back by a submit or worker."""
    env = flow_env(tmp_path, PGPASSWORD=pg_server.password)
    bare = store_spec(pg_server, f"f_{tmp_path.name.lower()}_bare", monkeypatch, migrated=False)
    (tmp_path / "t.yaml").write_text(
        'schema: openadapt-flow/targets@1\ntargets: [{name: a, backend: {url: "vnc://127.0.0.1:5901"}}]\n'
    )
    for args in (
        ["submit", str(BUNDLE), "-p", "vendor=A", "-p", "amount=1"],
        ["worker", "--targets", str(tmp_path / "t.yaml")],
    ):
        r = run_flow([*args, "--store", bare], tmp_path, env)
        assert r.returncode == 6 and "flow store migrate" in r.stderr and len(r.stderr.strip().splitlines()) == 1, (
            r.stderr
        )
    with psycopg.connect(bare, autocommit=True, password=pg_server.password) as c:
        assert c.execute("SELECT to_regclass('procrastinate_jobs')").fetchone() == (None,)  # nothing was created
    migrated = store_spec(pg_server, f"f_{tmp_path.name.lower()}_old", monkeypatch)
    with psycopg.connect(migrated, autocommit=True, password=pg_server.password) as c:
        c.execute("UPDATE flow_queue_schema SET version = '02.00.00_01'")
    r = run_flow(["submit", str(BUNDLE), "-p", "vendor=A", "-p", "amount=1", "--store", migrated], tmp_path, env)
    assert (
        r.returncode == 6
        and "procrastinate schema is 02.00.00_01" in r.stderr
        and len(r.stderr.strip().splitlines()) == 1
    ), r.stderr


def _approval_before_save(tmp: Path) -> Path:
    """The demo bundle with `approval: before` on its consequential `save`: every run pauses there for a decision."""
    out = tmp / "approve-bundle"
    shutil.copytree(BUNDLE, out)
    flow = out / "flow.yaml"
    flow.write_text(flow.read_text().replace("  consequential: true\n", "  consequential: true\n  approval: before\n"))
    return out


def test_an_approval_on_a_fleet_run_enqueues_its_resume_in_the_same_transaction(fleet):
    """SPEC §19: the decision enqueues the resume (migration 0003's trigger), not a scan: with no worker alive, the
    approve alone leaves the run's resume job queued; the next worker to come up runs it (LISTEN/NOTIFY wakes an idle one)."""
    [name] = _submit(fleet, 1, _approval_before_save(fleet.tmp))
    first = fleet.worker("w1")
    assert _flow(fleet, "wait", f"pg:{name}", "--timeout", "90").returncode == 3  # PAUSED(awaiting_approval)
    first.terminate()
    assert first.wait(20) == 0
    assert _sql(fleet, "SELECT count(*) FROM procrastinate_jobs WHERE task_name = 'flow.resume'") == [(0,)]
    r = _flow(fleet, "approve", f"pg:{name}", "--decision", "continue", "--operator", "ops")
    assert r.returncode == 0, r.stderr
    assert _sql(fleet, "SELECT status, args FROM procrastinate_jobs WHERE task_name = 'flow.resume'") == [
        ("todo", {"ref": f"pg:{name}"})
    ]
    fleet.worker("w2")
    wait_until(lambda: _all(fleet, [name], "COMPLETED"), 90, "the approved run resumed and COMPLETED")
    assert _saves(fleet, [name]) == {name: 1}
    assert fleet.rows() == [("ACME Corp", 1250.5)]


def _in_process_fleet(spec: str, tmp: Path, monkeypatch: pytest.MonkeyPatch, url: str) -> Any:
    """A fleet worker's tasks in this process (no queue served), with one desktop at `url`."""
    for k, v in flow_env(tmp).items():
        if k.startswith(("FLOW_", "XDG_")):
            monkeypatch.setenv(k, v)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp / "config"))
    monkeypatch.setenv("DEMO_DB_DSN", f"sqlite:///{tmp / 'app.db'}")  # the bundle's effect reads it: the run can begin
    (tmp / "t.yaml").write_text(
        f'schema: openadapt-flow/targets@1\ntargets: [{{name: desk0, backend: {{url: "{url}"}}}}]\n'
    )
    return FleetTasks(spec, Desks(spec, load_targets(tmp / "t.yaml")), DeployConfig.default(), None)


def _status(spec: str, tmp: Path, password: str, name: str) -> tuple[dict[str, Any], str]:
    env = flow_env(tmp, PGPASSWORD=password, XDG_CONFIG_HOME=str(tmp / "config"))
    shown = run_flow(["status", f"pg:{name}", "--store", spec], tmp, env)
    return json.loads(run_flow(["status", f"pg:{name}", "--store", spec, "--json"], tmp, env).stdout), shown.stdout


def test_a_submitted_run_that_cannot_start_ends_failed_with_its_reason(pg_server, tmp_path, monkeypatch):
    """A desktop that never answers (after START_TRIES starts), a bundle snapshot that does not load (at once): the run
    never began, and starting it again cannot help — it ends FAILED (SPEC §6: the run itself could not proceed; no
    policy or operator decided it) with a one-line reason `flow status` shows, not PENDING forever behind a failed job."""
    spec = store_spec(pg_server, f"f_{tmp_path.name.lower()}", monkeypatch)
    tasks = _in_process_fleet(spec, tmp_path, monkeypatch, f"vnc://127.0.0.1:{free_port()}")  # nothing listens there
    unreachable, broken = (
        submit(spec, BUNDLE, {"vendor": "ACME Corp", "amount": "1250.50"}, None).removeprefix("pg:") for _ in range(2)
    )
    with pytest.raises(DesktopSilent, match="desktop desk0 did not answer"):  # procrastinate retries the job
        tasks.start(unreachable)
    with pytest.raises(NoDesktopFree, match="busy or resting"), tasks.desks.hold(None):  # the silent desktop rests
        pass
    assert _sql_on(spec, pg_server.password, "SELECT name, failures FROM flow_desk_rest") == [
        ("desk0", 1)
    ]  # for every worker
    _sql_on(spec, pg_server.password, "UPDATE flow_desk_rest SET rest_until = now() RETURNING name")  # its rest is over
    tasks.desks.rest_s = 0.0  # and no rest from here: each start below tries the desktop again
    for _ in range(START_TRIES - 2):
        with pytest.raises(DesktopSilent):
            tasks.start(unreachable)
    assert _sql_on(
        spec,
        pg_server.password,
        "SELECT r.state, s.start_tries FROM flow_submissions s JOIN flow_runs r "
        "ON r.id = s.run WHERE r.name = '%s'" % unreachable,
    ) == [("PENDING", START_TRIES - 1)]
    with psycopg.connect(spec, autocommit=True, password=pg_server.password) as c:
        c.execute("INSERT INTO flow_blobs (digest, size, data) VALUES ('sha256:junk', 4, 'junk')")
        c.execute(
            "UPDATE flow_artifacts SET digest = 'sha256:junk' FROM flow_runs r WHERE r.id = run AND r.name = %s "
            "AND flow_artifacts.name = 'bundle/flow.yaml'",
            (broken,),
        )
    # in this order: the worker has the first run's bundle cached when the second's snapshot (other bytes) comes
    for name, words in ((unreachable, "could not start on desktop desk0: "), (broken, "could not start: ")):
        assert tasks.start(name).startswith(words)
        doc, shown = _status(spec, tmp_path, pg_server.password, name)
        assert doc["state"] == "FAILED" and doc["message"].startswith(words) and "\n" not in doc["message"], doc
        assert f"why: {doc['message']}" in shown
        assert tasks.start(name) == "started already"  # a re-run job leaves a final run alone
    assert _sql_on(spec, pg_server.password, "SELECT count(*) FROM flow_journal") == [
        (0,)
    ]  # nothing began, nothing sent


def _sql_on(spec: str, password: str, query: str) -> list[tuple]:
    with psycopg.connect(spec, autocommit=True, password=password) as c:
        return c.execute(query).fetchall()


def test_resume_of_a_queued_run_says_it_waits_for_a_fleet_worker_exit_6(pg_server, tmp_path, monkeypatch):
    spec = store_spec(pg_server, f"f_{tmp_path.name.lower()}", monkeypatch)
    name = submit(spec, BUNDLE, {"vendor": "ACME Corp", "amount": "1250.50"}, None).removeprefix("pg:")
    r = run_flow(["resume", f"pg:{name}", "--store", spec], tmp_path, flow_env(tmp_path, PGPASSWORD=pg_server.password))
    assert r.returncode == 6 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "queued for a fleet worker" in r.stderr and f"pg:{name}" in r.stderr, r.stderr
    assert _sql_on(spec, pg_server.password, "SELECT state FROM flow_runs") == [("PENDING",)]
    assert _sql_on(spec, pg_server.password, "SELECT count(*) FROM flow_leases") == [
        (0,)
    ]  # not even its lease was taken


def test_a_desktops_lock_session_is_probed_so_a_cut_off_worker_frees_it(pg_server, tmp_path, monkeypatch):
    """A worker partitioned from PostgreSQL must not keep its desktop locked for TCP's default ~2 h: the server probes
    each desk session (10 s idle, 3 probes 5 s apart), so the lock goes in about a lease's time. Checked where the
    server keeps it: the held desk's own session's settings, read over that session."""
    spec = store_spec(pg_server, f"f_{tmp_path.name.lower()}", monkeypatch)
    (tmp_path / "t.yaml").write_text(
        'schema: openadapt-flow/targets@1\ntargets: [{name: desk0, backend: {url: "vnc://127.0.0.1:5999"}}]\n'
    )
    desks = Desks(spec, load_targets(tmp_path / "t.yaml"))
    try:
        with desks.hold(None) as target:
            session = desks._sessions[target.name]
            got = [
                session.execute(f"SHOW {k}").fetchone()[0]
                for k in ("tcp_keepalives_idle", "tcp_keepalives_interval", "tcp_keepalives_count")
            ]
            assert got == ["10", "5", "3"]  # seconds, seconds, probes (0 would mean the OS default)
            # ...beside the spec's own options, not instead of them: the session is in the store's schema
            assert session.execute("SELECT current_schema()").fetchone()[0] == f"f_{tmp_path.name.lower()}"
    finally:
        desks.close()
