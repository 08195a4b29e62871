"""Starting and continuing Python workflow runs (spec §14), on the engine's own machinery.

A workflow run is a durable run whose manifest says `"kind": "workflow"` and names its entry
(`module:function`) and args. Its journal holds one `step_started` header per call, then the
call's records and its `step_verified` result. `flow resume` (runtime/resume/, the one resume)
opens it and hands it to `continue_workflow` (runtime/resume/workflow.py), which re-imports the entry and runs it
again from the top: recorded calls return at once (runtime/act/durable). `ctx.replay` and `ctx.child` run as
child runs in `children/<call id>/`, started and continued through the context's `Runs`
(runtime/runs.py), in the same process. `wait` is in workflow_wait.
"""

from __future__ import annotations

import hashlib
import inspect
import socket
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from openadapt_flow.backends.factory import open_backend
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.bundle.models import Step
from openadapt_flow.bundle.params import BoundParams
from openadapt_flow.errors import RefusedError
from openadapt_flow.records.entry import JournalEntry
from openadapt_flow.records.rundoc import ManifestBody
from openadapt_flow.records.states import PausedReason, RecordType, RunState
from openadapt_flow.runtime.act.assemble import NoDesktop, RunInputs, RunSetup, make_context, stop_on_signals
from openadapt_flow.runtime.act.durable.calls import jsonable
from openadapt_flow.runtime.act.durable.child import ChildCall, run_child
from openadapt_flow.runtime.act.engine import finish, run_body
from openadapt_flow.runtime.judge.calls import call_steps
from openadapt_flow.runtime.judge.halt import Halt
from openadapt_flow.runtime.start.context import Progress, RunContext
from openadapt_flow.runtime.start.launch import (
    BackendFactory,
    ReplayRequest,
    Reporter,
    RunOutcome,
    Runs,
    WorkflowRequest,
)
from openadapt_flow.runtime.start.lifecycle import begin_run
from openadapt_flow.runtime.start.runref import store_for
from openadapt_flow.runtime.workflow.api import ACTIVE, bind_args, entry_of, resolve_entry
from openadapt_flow.runtime.workflow.ctx import DivergedError, WorkflowContext, WorkflowStop, invoke
from openadapt_flow.runtime.workflow.wait import workflow_result
from openadapt_flow.store import CHILDREN
from openadapt_flow.store.atomic import StorageFault
from openadapt_flow.store.base import JournalWriter, RunHandle, RunLease
from openadapt_flow.store.faults import crash_point
from openadapt_flow.store.keys import load_decision_key, load_key
from openadapt_flow.version import __version__
from openadapt_flow.vision.engines import engine_versions


def _source_digest(fn: Callable[..., Any], entry: str) -> str:
    try:
        data = Path(inspect.getsourcefile(fn) or "").read_bytes()
    except (OSError, TypeError):
        data = entry.encode()
    return "sha256:" + hashlib.sha256(data).hexdigest()


def start_workflow(
    req: WorkflowRequest,
    runs: Runs,
    progress: Progress | None = None,
    reporter: Reporter | None = None,
    backend_factory: BackendFactory = open_backend,
    stop: threading.Event | None = None,
) -> RunOutcome:
    """Start a workflow run. Bad input (unknown entry, bad args, unreachable backend) raises before any run dir exists.
    `runs` starts and continues its child runs."""
    fn = resolve_entry(req.entry)
    args = bind_args(fn, req.args, from_text=req.args_from_text)
    store = store_for(req.config, req.run_dir)
    if req.run_dir is not None:
        store.check_new(str(req.run_dir))
    key = load_key(create=True)
    load_decision_key(create=True)  # workflows are always durable: the first run creates it
    if req.backend is not None and req.probe_backend:
        backend_factory(req.backend).close()
    run = store.create_run(None if req.run_dir is None else str(req.run_dir))
    crash_point("start:dir_created")
    run_id = f"run-{uuid.uuid4().hex[:12]}"
    digest = _source_digest(fn, req.entry)
    lease = run.lease(req.config.runtime.lease_ttl_s).acquire()
    try:
        lease.start_heartbeat()
        crash_point("start:lease_acquired")
        try:  # atomically (begin_run): a death before manifest.json leaves no run, and nothing ran
            journal, started = begin_run(
                run,
                key,
                _manifest(run_id, req, args, digest),
                {"kind": "workflow", "entry": req.entry, "durable": True, "lease_generation": lease.generation},
            )
        except StorageFault as f:
            f.message = f"the run could not start ({f.detail}); nothing ran — start it again once the fault is gone"
            raise
        rc = open_context(
            run,
            journal,
            lease,
            [started],
            WorkflowIdentity(run_id, digest, args, req.config),
            Wiring(runs, progress, reporter, stop),
        )
        runner = Runner(req.backend, None, backend_factory)
        with stop_on_signals(rc.stop):
            return drive(WorkflowContext(rc, req.entry, {}, runner, is_async=is_async(fn)), fn, args)
    finally:
        lease.release()


def _manifest(run_id: str, req: WorkflowRequest, args: Mapping[str, Any], digest: str) -> ManifestBody:
    return {
        "run_id": run_id,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "tool_version": __version__,
        "host": socket.gethostname(),
        "kind": "workflow",
        "entry": req.entry,
        "args": args,
        "bundle": {"path": None, "name": req.entry, "digest": digest, "files": []},
        "params": args,
        "backend": req.backend.to_json() if req.backend else None,
        "step_ids": [],
        "durable": True,
        "allow_model": False,
        "config": req.config.model_dump(mode="json", by_alias=True),
        "parent_run": req.parent_run,
        "child_runs": [],
        "engines": engine_versions(),
    }


def is_async(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__func__", None))


@dataclass(frozen=True)
class WorkflowIdentity:
    """What a workflow run is: its id, its code's digest, the arguments it was called with and its config."""

    run_id: str
    digest: str
    args: Mapping[str, Any]
    config: DeployConfig


@dataclass(frozen=True)
class Wiring:
    """What a run is driven with: the runs that start its children, who watches it, what stops it."""

    runs: Runs
    progress: Progress | None = None
    reporter: Reporter | None = None
    stop: threading.Event | None = None


def open_context(
    run: RunHandle,
    journal: JournalWriter,
    lease: RunLease,
    records: list[JournalEntry],
    ident: WorkflowIdentity,
    wiring: Wiring,
) -> RunContext:
    """A workflow run's context: no bundle and no desktop; its steps are its calls, those the journal has to begin with."""
    rc = make_context(
        run,
        ident.run_id,
        journal,
        NoDesktop(),
        RunInputs(None, BoundParams(dict(ident.args)), ident.digest),
        RunSetup(ident.config, wiring.runs, progress=wiring.progress, reporter=wiring.reporter),
    )
    rc.steps.update((s.id, s) for s in call_steps(records))
    rc.lease = lease
    rc.watch(records)
    if wiring.stop is not None:
        rc.stop = wiring.stop
    return rc


def drive(wctx: WorkflowContext, fn: Callable[..., Any], args: Mapping[str, Any]) -> RunOutcome:
    """Run the workflow function to its return, a pause, a halt, a block or a stop (engine.run_body, as a bundle's
    steps run); write the stop. A run whose code diverged from its journal is paused and refused."""
    rc = wctx.rc
    try:
        stop = run_body(rc, partial(_body, wctx, fn, args))
    except DivergedError as d:
        finish(rc, RunState.PAUSED, str(d), "divergence", PausedReason.AWAITING_APPROVAL, d.step)
        raise RefusedError(str(d)) from None
    return finish(rc, *stop)


def _body(wctx: WorkflowContext, fn: Callable[..., Any], args: Mapping[str, Any]) -> None:
    """A workflow run's body: its own code. What that code raises (other than a divergence) is a halt."""
    token = ACTIVE.set(wctx)
    try:
        try:
            value = invoke(fn, (wctx,), dict(args))
            wctx.unreached()
            wctx.rc.journal.append(
                RecordType.WORKFLOW_RETURNED, None, {"result": jsonable(value, "the workflow")}, sync=True
            )
        except WorkflowStop as s:
            raise s.cause from None
    except DivergedError:
        raise
    except Exception as e:  # the workflow's own code raised (RunSignals are BaseExceptions: not caught here)
        raise Halt("workflow", f"the workflow raised {type(e).__name__}: {e}{_where(e)}") from None
    finally:
        ACTIVE.reset(token)


def _where(e: BaseException) -> str:
    frames = traceback.extract_tb(e.__traceback__)
    return f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""


class Runner:
    """Starts or continues the child runs of `ctx.replay` and `ctx.child`, in this process, under their own leases, through
    the one child mechanism (runtime/act/durable/child.py, as a bundle's `flow` step)."""

    def __init__(self, spec: BackendSpec | None, override: BackendSpec | None, factory: BackendFactory) -> None:
        self.spec = spec  # what a new child drives: the run's backend (or the resume's override)
        self.override = override  # what a continued child drives instead of its own manifest's backend
        self.factory = factory

    def replay(self, ctx: WorkflowContext, step: Step, bundle: str, params: dict[str, object]) -> Any:
        def start(child: RunHandle) -> RunOutcome:
            req = ReplayRequest(
                bundle=_bundle_path(ctx.entry, bundle),
                params=params,
                backend=self.spec,
                config=ctx.rc.config,
                run_dir=child.ref,
                durable=True,
                parent_run=ctx.rc.run.ref,
            )
            return _runs(ctx).replay(req, ctx.rc.progress, ctx.rc.reporter, self.factory)

        child = run_child(ctx.rc, ChildCall(step, ctx.index, bundle, start, partial(self._resume, ctx)))
        return {"run_id": child.manifest()["run_id"], "run_dir": f"{CHILDREN}/{step.id}", "state": RunState.COMPLETED}

    def child(
        self,
        ctx: WorkflowContext,
        step: Step,
        wf: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: Mapping[str, object],
    ) -> Any:
        try:  # bad arguments halt before any child run is begun
            named = inspect.signature(wf).bind(None, *args, **kwargs).arguments
        except TypeError as e:
            raise Halt("input", f"ctx.child({entry_of(wf)}): {e}", step=step.id) from None
        given = {k: v for k, v in list(named.items())[1:]}

        def start(child: RunHandle) -> RunOutcome:
            req = WorkflowRequest(
                entry_of(wf),
                given,
                self.spec,
                ctx.rc.config,
                run_dir=child.ref,
                parent_run=ctx.rc.run.ref,
                probe_backend=False,
            )
            return _runs(ctx).start_workflow(req, ctx.rc.progress, ctx.rc.reporter, self.factory, ctx.rc.stop)

        return workflow_result(
            run_child(ctx.rc, ChildCall(step, ctx.index, entry_of(wf), start, partial(self._resume, ctx)))
        )

    def _resume(self, ctx: WorkflowContext, child: RunHandle) -> RunOutcome:
        """The one resume, for a bundle child as for a workflow child."""
        return _runs(ctx).resume(
            child,
            backend=self.override,
            progress=ctx.rc.progress,
            reporter=ctx.rc.reporter,
            backend_factory=self.factory,
            stop=ctx.rc.stop,
        )


def _runs(ctx: WorkflowContext) -> Runs:
    assert ctx.rc.runs is not None
    return ctx.rc.runs


def _bundle_path(entry: str, bundle: str) -> Path:
    """A relative bundle path is looked up from the current directory, then beside the workflow's module."""
    p = Path(bundle).expanduser()
    if p.is_absolute() or p.exists():
        return p.resolve()
    source = getattr(sys.modules.get(entry.partition(":")[0]), "__file__", None)
    beside = Path(source).parent / p if source else p
    return beside.resolve() if beside.exists() else p
