"""The fleet's queue on procrastinate (spec §19): `flow submit` creates the run PENDING and its start job
(runtime/fleet/submit.py); fleet workers run start and resume jobs, each on a desktop it holds. A pause or decision on
a fleet run enqueues its resume in the transaction that records it (migration 0003's triggers), and the job's insert
NOTIFYs the queue, waking an idle worker. A periodic reconcile task on any worker — every lease TTL, the safety net,
never a faster poll — finalises a dead worker's runs INTERRUPTED and enqueues whatever is due and was not queued.

The run's lease in our store stays the authority on who may act: a job procrastinate leaves in `doing` (its worker
killed, its worker row pruned, or the worker restarted under the same name) is harmless — the reconciler sees the
run's owner gone by its lease, finalises it, and enqueues a fresh resume job; a stalled holder is fenced by the store.
"""

from __future__ import annotations

import importlib
import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
from procrastinate import App, PsycopgConnector, RetryStrategy
from procrastinate.exceptions import AlreadyEnqueued

from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.bundle.loader import LoadedBundle
from openadapt_flow.errors import BackendTimeout, ConnectionFailed, FlowError, RefusedError
from openadapt_flow.runtime.fleet.claim import START_TRIES, BundleCache, count_start_try, fail_start, read_submission
from openadapt_flow.runtime.fleet.desks import Desks, NoDesktopFree, Ready
from openadapt_flow.runtime.fleet.dirty import Dirty
from openadapt_flow.runtime.fleet.ride import DB_RETRY_FOR_S, first_line, ride
from openadapt_flow.runtime.fleet.submit import fleet_store
from openadapt_flow.runtime.fleet.targets import Target
from openadapt_flow.runtime.operate.reconciler import reconcile_root
from openadapt_flow.runtime.runs import replay, reset_app
from openadapt_flow.runtime.start.launch import ReplayRequest, Reporter
from openadapt_flow.runtime.worker import HOLD_WAIT_S, Worker, resume_past_holders
from openadapt_flow.store import PG_PREFIX, PostgresRun, StoreUnavailable
from openadapt_flow.store.atomic import StorageFault
from openadapt_flow.store.lease import LeaseLost
from openadapt_flow.vision.ocr import OcrEngine

QUEUE = "flow"
RECONCILE_JOB = "reconcile"  # not-vocabulary: the periodic job's name and lock, not a decision


@dataclass
class _End:
    state: str | None = None  # how the run's block on a desktop ended (a run state; "fenced")


class DesktopSilent(FlowError):
    """The desktop a start held did not answer; the start is retried (on another desktop if one serves the run)."""


RETRY = RetryStrategy(max_attempts=100_000, wait=1, retry_exceptions={NoDesktopFree, DesktopSilent})
# the backend module each kind of desktop needs (backends/factory.py imports it on a first connect), for warm_up
BACKEND_MODULES = {k: f"openadapt_flow.backends.{k}" for k in ("vnc", "rdp", "screen", "fixture")}
STALE_S = 30.0  # procrastinate's stalled_worker_timeout: a worker silent this long is gone
# Submitted runs still queued (PENDING, no journal) with no live start job: its worker was killed before the run
# began (the job left in `doing`, its worker row pruned or the worker restarted under the same name). A job queued
# (todo), failed (not a start failure, which ends the run FAILED: a storage fault, a bug), or run by a worker that
# still heartbeats is live.
ORPHANS = """
SELECT r.name FROM flow_submissions s JOIN flow_runs r ON r.id = s.run
WHERE r.state = 'PENDING' AND NOT EXISTS (SELECT 1 FROM flow_journal j WHERE j.run = r.id)
  AND NOT EXISTS (
    SELECT 1 FROM procrastinate_jobs j LEFT JOIN procrastinate_workers w ON w.id = j.worker_id
    WHERE j.task_name = 'flow.start' AND j.args->>'name' = r.name
      AND (j.status IN ('todo', 'failed') OR (j.status = 'doing' AND w.last_heartbeat > now() - make_interval(secs => %s))))
"""


POOL_TIMEOUT_S = 10.0  # a queue statement waits this long for a pooled connection (psycopg_pool's default: 30 s)


def queue_app(spec: str) -> App:
    """procrastinate on the store. Its pool's wait for a connection is bounded at POOL_TIMEOUT_S: with the database
    gone, each of its worker's last statements (a job's status, its unregistering) would otherwise wait 30 s before the
    worker returns and ours can reconnect or give up (runtime/fleet/ride.py)."""
    return App(connector=PsycopgConnector(conninfo=spec, timeout=POOL_TIMEOUT_S))


def reconcile_cron(ttl_s: float) -> str:
    """Every lease TTL (spec §19: no polling loop faster than it), as procrastinate's cron (its sixth field: seconds)."""
    every = round(ttl_s)
    return "* * * * *" if every >= 60 else f"* * * * * */{max(1, every)}"


class Fleet:
    """One fleet worker's tasks: it starts and resumes runs on the desktops of its targets file."""

    def __init__(self, spec: str, desks: Desks, config: DeployConfig, reporter: Reporter | None) -> None:
        self.spec = spec
        self.desks = desks
        self.config = config.model_copy(update={"runtime": config.runtime.model_copy(update={"store": spec})})
        self.reporter = reporter
        self.bundles = BundleCache()
        self._ocrs: queue.SimpleQueue[OcrEngine] = (
            queue.SimpleQueue()
        )  # idle OCR engines: a model loaded once, not per run
        self.app = queue_app(spec)
        self.app.task(name="flow.start", queue=QUEUE, retry=RETRY)(self.start)
        self.app.task(name="flow.resume", queue=QUEUE, retry=RETRY)(self.resume)
        self.app.periodic(cron=reconcile_cron(self.config.runtime.lease_ttl_s), periodic_id=RECONCILE_JOB)(
            self.app.task(name="flow.reconcile", queue=QUEUE, queueing_lock=RECONCILE_JOB)(self.reconcile)
        )

    def start(self, name: str) -> str:
        """Start the submitted run `name` on a free desktop that serves its label (once: a run begun is left to the
        reconciler, which resumes it if its worker died). A start that fails for good ends the run FAILED. A dirty
        desktop (runtime/fleet/dirty.py) is reset with the run's bundle first, or passed over. The store lost under
        it (a restart) is no start failure: the run is left to the reconciler (PENDING: its start is queued again)."""
        try:
            return self._start(name)
        except (StorageFault, psycopg.OperationalError, StoreUnavailable) as e:
            return self._store_lost(f"{PG_PREFIX}{name}", e)

    def _start(self, name: str) -> str:
        sub = read_submission(fleet_store(self.spec), name)
        if not sub.queued:
            return "started already"
        desk: str | None = None
        try:
            loaded = self.bundles.bundle(sub.run)
            with self.desks.hold(sub.label, sub.run.ref, self._reset_for(loaded)) as target, self._ocr() as ocr:
                desk = target.name
                req = ReplayRequest(
                    bundle=loaded.root,
                    params=sub.params,
                    backend=target.spec(),
                    config=self.config,
                    run_dir=sub.run.ref,
                    durable=True,
                    submitted=True,
                    loaded=loaded,
                    ocr=ocr,
                    fence=self.desks.fence(target.name),
                )
                with self._ending(target.name, sub.run) as end:
                    end.state = replay(req, reporter=self.reporter).state
                    return end.state
        except (ConnectionFailed, BackendTimeout) as e:  # the desktop did not answer (it rests now): start again
            if desk is None:
                raise
            if count_start_try(sub.run) < START_TRIES:
                raise DesktopSilent(f"desktop {desk} did not answer: {e}") from e
            return fail_start(sub.run, f" on desktop {desk}", e, self.config.runtime.lease_ttl_s)
        except LeaseLost as e:  # stalled past the TTL: the store fenced us; the reconciler gave the run to another
            return f"fenced: {e}"
        except NoDesktopFree:
            raise  # procrastinate retries it shortly
        except RefusedError as e:  # another worker started it first (a re-queued job): started once
            return f"not started: {e}"
        except StoreUnavailable:
            raise
        except FlowError as e:  # bad bundle, a login refused: the run never began, and never will by retrying
            return fail_start(sub.run, f" on desktop {desk}" if desk else "", e, self.config.runtime.lease_ttl_s)

    def _store_lost(self, ref: str, e: BaseException) -> str:
        """The store went away under a job (a restart): the run stopped at a safe boundary, or never began. Nothing to
        retry here: the reconciler re-queues its start (still PENDING) or finalises and resumes it (owner gone)."""
        why = f"{ref}: the store was lost under this job ({first_line(e)}); the reconciler takes the run up again"
        self.desks.say(why)
        return why

    def _reset_for(self, loaded: LoadedBundle) -> Ready:
        """How a new run of `loaded` takes a dirty desktop: its bundle's reset, then the start check (spec §22). A
        bundle with no reset leaves the desktop dirty, for an operator (`flow desk clean`)."""

        def ready(target: Target, found: Dirty) -> str | None:
            if loaded.model.reset is None:
                return (
                    f"the bundle {loaded.model.name!r} has no reset; once it is back at its start state: "
                    f"flow desk clean {target.name}"
                )
            done = reset_app(loaded, target.spec(), self.config)
            if done.ok:
                self.desks.say(f"desktop {target.name} reset ({found.reason}); at its start state")
                return None
            return f"its reset did not bring it back: {done.reason}"

        return ready

    @contextmanager
    def _ending(self, desk: str, run: PostgresRun, resuming: bool = False) -> Iterator[_End]:
        """Record on the desktop how the run's block ended: its state; a run stopped by an error stays dirty unless
        it never began there (a start still queued: nothing was sent)."""
        end = _End()
        try:
            yield end
        except BaseException as e:
            begun = resuming or not read_submission(fleet_store(self.spec), run.name).queued
            self.desks.ended(desk, run.ref, f"stopped ({type(e).__name__})" if begun else None)
            raise
        else:
            self.desks.ended(desk, run.ref, end.state or "stopped")

    @contextmanager
    def _ocr(self) -> Iterator[OcrEngine]:
        """An idle OCR engine for one run (a new one if none is idle), its read cache emptied: the run reads as with a
        fresh engine, minus the model load (~0.1 CPU s, beside the run's first step)."""
        try:
            engine = self._ocrs.get_nowait()
        except queue.Empty:
            engine = OcrEngine()
        engine.clear_cache()
        try:
            yield engine
        finally:
            self._ocrs.put(engine)

    def warm_up(self, concurrency: int) -> None:
        """Before the first claim, pay what every worker's first run would: its desktops' backend modules (VNC loads
        twisted: ~0.4 s), one OCR engine per concurrent run, one session per desktop."""
        for kind in sorted({t.spec().kind for t in self.desks.targets.targets}):
            if kind in BACKEND_MODULES:
                importlib.import_module(BACKEND_MODULES[kind])
        for _ in range(concurrency):
            self._ocrs.put(OcrEngine())
        self.desks.open_sessions()

    def _desk_of(self, ref: str) -> str | None:
        """The target a run was driving: its app's state lives on that desktop, so it resumes there (waiting for it)."""
        backend = fleet_store(self.spec).open_run(ref).manifest().get("backend") or {}
        for target in self.desks.targets.targets:
            if target.spec().to_json() == backend:
                return target.name
        return None

    def resume(self, ref: str) -> str:
        """Resume on the run's desktop. A decision's transaction enqueues this job, so it may be claimed while the
        deciding command still holds the run: a resume refused while another command holds it briefly is tried again
        as soon as that holder lets go (runtime/worker.resume_past_holders), not left to the next reconcile scan.
        The desktop is taken dirty or not (the run's own state is there; its resume re-checks before any input)."""
        try:
            with self.desks.hold(self._desk_of(ref), ref) as target:
                run = fleet_store(self.spec).open_run(ref)
                with self._ending(target.name, run, resuming=True) as end:
                    try:
                        end.state = resume_past_holders(
                            run,
                            HOLD_WAIT_S,
                            threading.Event(),
                            backend=target.spec(),
                            reporter=self.reporter,
                            fence=self.desks.fence(target.name),
                        ).state
                    except LeaseLost as e:
                        end.state = "fenced"
                        return f"fenced: {e}"
                    return end.state
        except (StorageFault, psycopg.OperationalError, StoreUnavailable) as e:
            return self._store_lost(ref, e)

    def reconcile(self, timestamp: int) -> None:
        """Finalise runs whose owner is gone (by our lease), then enqueue every resume that is due. A store lost
        meanwhile (a restart) ends this pass; the next one, a lease TTL later, does it all again."""
        try:
            store = fleet_store(self.spec)
            reconcile_root(store)
            for name in store.all(ORPHANS, (STALE_S,)):
                self._enqueue("flow.start", f"start:{name[0]}", name=name[0])
            for run in Worker(store).due_runs():
                self._enqueue("flow.resume", f"resume:{run.ref}", ref=run.ref)
        except (StorageFault, psycopg.OperationalError, StoreUnavailable) as e:
            self.desks.say(f"reconcile: the store was lost ({first_line(e)}); the next pass does it again")

    def _enqueue(self, task: str, lock: str, **kwargs: str) -> None:
        """Queue a job unless one for the same run is queued already (its queueing lock)."""
        try:
            self.app.configure_task(task, queue=QUEUE, queueing_lock=lock).defer(**kwargs)
        except AlreadyEnqueued:
            pass

    def serve(self, concurrency: int, name: str | None = None, db_retry_for_s: float = DB_RETRY_FOR_S) -> None:
        """Drain the queue until SIGTERM/SIGINT, riding through a restart of the store (runtime/fleet/ride.py): a store
        that does not answer for `db_retry_for_s` ends the worker (Unavailable, exit 75)."""
        self.warm_up(concurrency)

        opts: dict[str, Any] = {
            "queues": [QUEUE],
            "concurrency": concurrency,
            "name": name,
            "wait": True,
            "listen_notify": True,
            "delete_jobs": "successful",
            "install_signal_handlers": False,
        }

        async def drain() -> None:
            async with self.app.open_async():
                await self.app.run_worker_async(**opts)

        try:
            with self.app.open():
                ride(self.spec, drain, db_retry_for_s, self.desks.say)
        finally:
            self.desks.close()
