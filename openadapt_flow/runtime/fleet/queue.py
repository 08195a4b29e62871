"""The fleet's queue on procrastinate (SPEC §19): `flow submit` defers a start job; fleet workers run start and resume
jobs, each on a desktop it holds; a periodic reconcile task on any worker finalises a dead worker's runs INTERRUPTED
and enqueues the resumes that are due (timers, approvals, answers, signals, interrupted runs with nothing uncertain).

The run's lease in our store stays the authority on who may act: a job procrastinate leaves in `doing` (its worker
killed, its worker row pruned, or the worker restarted under the same name) is harmless — the reconciler sees the
run's owner gone by its lease, finalises it, and enqueues a fresh resume job; a stalled holder is fenced by the store.
"""

from __future__ import annotations

import io
import json
import tarfile
import tempfile
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import psycopg
from procrastinate import App, PsycopgConnector, RetryStrategy
from procrastinate.exceptions import AlreadyEnqueued

from openadapt_flow.bundle.loader import load_bundle
from openadapt_flow.errors import RunDirError
from openadapt_flow.runtime.act.launch import ReplayRequest, Reporter
from openadapt_flow.runtime.decide.config import DeployConfig
from openadapt_flow.runtime.fleet.desks import Desks, NoDesktopFree
from openadapt_flow.runtime.operate.reconciler import reconcile_root
from openadapt_flow.runtime.runs import replay, resume
from openadapt_flow.runtime.worker import Worker
from openadapt_flow.store.lease import LeaseLost
from openadapt_flow.store.postgres_schema import check_schema
from openadapt_flow.store.postgres_spec import PREFIX, redact
from openadapt_flow.store.select import postgres_store

QUEUE = "flow"
RETRY = RetryStrategy(max_attempts=100_000, wait=1, retry_exceptions={NoDesktopFree})
STALE_S = 30.0  # procrastinate's stalled_worker_timeout: a worker silent this long is gone
# Submitted runs that never got a run row and have no live start job: queued (todo), failed (bad input), or run by a
# worker that still heartbeats. A start job left in `doing` by a killed worker (its row pruned, or restarted under the same name) is not.
ORPHANS = """
SELECT s.name FROM flow_submissions s
WHERE NOT EXISTS (SELECT 1 FROM flow_runs r WHERE r.name = s.name)
  AND NOT EXISTS (
    SELECT 1 FROM procrastinate_jobs j LEFT JOIN procrastinate_workers w ON w.id = j.worker_id
    WHERE j.task_name = 'flow.start' AND j.args->>'name' = s.name
      AND (j.status IN ('todo', 'failed') OR (j.status = 'doing' AND w.last_heartbeat > now() - make_interval(secs => %s))))
"""
RECONCILE_CRON = "* * * * * */2"  # every two seconds (procrastinate's sixth field is seconds)


def queue_app(spec: str) -> App:
    return App(connector=PsycopgConnector(conninfo=spec))


# What `flow submit` records for a fleet worker to start the run: the bundle travels in the database (no shared disk).
SUBMISSIONS = """
CREATE TABLE IF NOT EXISTS flow_submissions (
    name          text PRIMARY KEY,             -- the run's name in the store (flow_runs.name once it starts)
    bundle        bytea NOT NULL,               -- the bundle folder as a gzipped tar
    params        jsonb NOT NULL DEFAULT '{}',
    label         text,                         -- --target LABEL: a target with this name or label runs it
    submitted_at  timestamptz NOT NULL DEFAULT now()
)"""


def ensure_queue_schema(spec: str) -> None:
    """The fleet's tables — procrastinate's, and flow_submissions — beside the run store's (which must be migrated);
    applied once, concurrent starters serialised on an advisory lock."""
    with psycopg.connect(spec, autocommit=True) as conn:
        check_schema(conn, redact(spec))
        conn.execute("SELECT pg_advisory_lock(hashtext('flow-queue-schema'))")
        try:
            conn.execute(SUBMISSIONS)
            row = conn.execute("SELECT to_regclass('procrastinate_jobs')").fetchone()
            if row is None or row[0] is None:
                app = queue_app(spec)
                with app.open():
                    app.schema_manager.apply_schema()
        finally:
            conn.execute("SELECT pg_advisory_unlock(hashtext('flow-queue-schema'))")


def _tar(root: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(root, arcname="bundle")
    return buf.getvalue()


def submit(spec: str, bundle: Path, params: Mapping[str, Any], label: str | None) -> str:
    """Record the run's submission and enqueue its start; the run's reference (pg:NAME) comes back."""
    load_bundle(bundle)  # bad input before anything is queued
    ensure_queue_schema(spec)
    name = f"fleet-{uuid.uuid4().hex[:12]}"
    with psycopg.connect(spec, autocommit=True) as conn:
        conn.execute("INSERT INTO flow_submissions (name, bundle, params, label) VALUES (%s, %s, %s, %s)",
                     (name, _tar(bundle), json.dumps(dict(params)), label))
    app = queue_app(spec)
    with app.open():
        app.configure_task("flow.start", queue=QUEUE, queueing_lock=f"start:{name}").defer(name=name)
    return PREFIX + name


class Fleet:
    """One fleet worker's tasks: it starts and resumes runs on the desktops of its targets file."""

    def __init__(self, spec: str, desks: Desks, config: DeployConfig, reporter: Reporter | None) -> None:
        self.spec = spec
        self.desks = desks
        self.config = config.model_copy(update={"runtime": config.runtime.model_copy(update={"store": spec})})
        self.reporter = reporter
        self.app = queue_app(spec)
        self.app.task(name="flow.start", queue=QUEUE, retry=RETRY)(self.start)
        self.app.task(name="flow.resume", queue=QUEUE, retry=RETRY)(self.resume)
        self.app.periodic(cron=RECONCILE_CRON, periodic_id="reconcile")(
            self.app.task(name="flow.reconcile", queue=QUEUE, queueing_lock="reconcile")(self.reconcile))

    def _submission(self, name: str) -> tuple[bytes, dict[str, Any], str | None] | None:
        with psycopg.connect(self.spec, autocommit=True) as conn:
            row = conn.execute("SELECT bundle, params, label FROM flow_submissions WHERE name = %s", (name,)).fetchone()
        return None if row is None else (bytes(row[0]), dict(row[1]), row[2])

    def start(self, name: str) -> str:
        sub = self._submission(name)
        if sub is None:
            raise RunDirError(f"{PREFIX}{name}: no such submission")
        if postgres_store(self.spec).one("SELECT 1 FROM flow_runs WHERE name = %s", (name,)):  # started before (its worker died after begin_run): the reconciler resumes it
            return "started already"
        bundle, params, label = sub
        with self.desks.hold(label) as target, tempfile.TemporaryDirectory(prefix="flow-fleet-") as tmp:
            with tarfile.open(fileobj=io.BytesIO(bundle), mode="r:gz") as tar:
                tar.extractall(tmp, filter="data")
            req = ReplayRequest(bundle=Path(tmp) / "bundle", params=params, backend=target.spec(), config=self.config,
                                run_dir=PREFIX + name, durable=True, param_flags=frozenset(params))
            try:
                return replay(req, reporter=self.reporter).state
            except LeaseLost as e:  # stalled past the TTL: the store fenced us; the reconciler gave the run to another
                return f"fenced: {e}"

    def _desk_of(self, ref: str) -> str | None:
        """The target a run was driving: its app's state lives on that desktop, so it resumes there (waiting for it)."""
        backend = postgres_store(self.spec).open_run(ref).manifest().get("backend") or {}
        for target in self.desks.targets.targets:
            if target.spec().to_json() == backend:
                return target.name
        return None

    def resume(self, ref: str) -> str:
        with self.desks.hold(self._desk_of(ref)) as target:
            try:
                return resume(ref, backend=target.spec(), reporter=self.reporter).state
            except LeaseLost as e:
                return f"fenced: {e}"

    def reconcile(self, timestamp: int) -> None:
        """Finalise runs whose owner is gone (by our lease), then enqueue every resume that is due."""
        store = postgres_store(self.spec)
        reconcile_root(store)
        for name in store.all(ORPHANS, (STALE_S,)):
            self._enqueue("flow.start", f"start:{name[0]}", name=name[0])
        for run in Worker(store).due_runs():
            self._enqueue("flow.resume", f"resume:{run.ref}", ref=run.ref)

    def _enqueue(self, task: str, lock: str, **kwargs: str) -> None:
        """Queue a job unless one for the same run is queued already (its queueing lock)."""
        try:
            self.app.configure_task(task, queue=QUEUE, queueing_lock=lock).defer(**kwargs)
        except AlreadyEnqueued:
            pass

    def serve(self, concurrency: int, name: str | None = None) -> None:
        with self.app.open():
            self.app.run_worker(queues=[QUEUE], concurrency=concurrency, name=name, wait=True, listen_notify=True,
                                delete_jobs="successful")
