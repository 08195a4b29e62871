"""Starting and continuing Python workflow runs (SPEC §14), on the engine's own machinery.

A workflow run is a durable run whose manifest says `"kind": "workflow"` and names its entry
(`module:function`) and args. Its journal holds one `step_started` header per call, then the
call's records and its `step_verified` result. `flow resume` (runtime/resume.py, the one resume)
opens it and hands it to `continue_workflow`, which re-imports the entry and runs it again from
the top: recorded calls return at once (runtime/act/durable.py). `ctx.replay` and `ctx.child` run as
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
from functools import partial
from pathlib import Path
from typing import Any

from openadapt_flow import __version__
from openadapt_flow.backends.factory import open_backend
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.models import Step
from openadapt_flow.bundle.params import BoundParams
from openadapt_flow.errors import FlowError, RefusedError, UsageError
from openadapt_flow.runtime.decide.calls import call_steps, history
from openadapt_flow.runtime.decide.config import DeployConfig
from openadapt_flow.runtime.act.context import Progress, RunContext
from openadapt_flow.runtime.act.engine import NoDesktop, RunInputs, RunSetup, finish, make_context, run_body, stop_on_signals
from openadapt_flow.runtime.decide.halt import Halt, Pause, StopRequested
from openadapt_flow.runtime.act.launch import BackendFactory, ReplayRequest, Reporter, RunOutcome, Runs, WorkflowRequest
from openadapt_flow.runtime.act.lifecycle import begin_run
from openadapt_flow.runtime.decide.policy import PolicyBlock
from openadapt_flow.runtime.act.runref import ref_path, store_for
from openadapt_flow.store.states import RunState
from openadapt_flow.runtime.workflow.api import ACTIVE, bind_args, entry_of, resolve_entry
from openadapt_flow.runtime.workflow.ctx import DivergedError, WorkflowContext, WorkflowStop, invoke, jsonable
from openadapt_flow.runtime.workflow.decision import apply_decision, child_waiting, decision_for, journaled_deliveries
from openadapt_flow.runtime.workflow.wait import workflow_result
from openadapt_flow.store.atomic import StorageFault
from openadapt_flow.store.base import JournalWriter, RunHandle, RunLease
from openadapt_flow.store.faults import crash_point
from openadapt_flow.store.keys import load_decision_key, load_key
from openadapt_flow.store.rundir import CHILDREN


def _source_digest(fn: Callable[..., Any], entry: str) -> str:
    try:
        data = Path(inspect.getsourcefile(fn) or "").read_bytes()
    except (OSError, TypeError):
        data = entry.encode()
    return "sha256:" + hashlib.sha256(data).hexdigest()


def start_workflow(req: WorkflowRequest, runs: Runs, progress: Progress | None = None, reporter: Reporter | None = None,
                   backend_factory: BackendFactory = open_backend, stop: threading.Event | None = None) -> RunOutcome:
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
            journal, started = begin_run(run, key, _manifest(run_id, req, args, digest),
                                         {"kind": "workflow", "entry": req.entry, "durable": True, "lease_generation": lease.generation})
        except StorageFault as f:
            f.message = f"the run could not start ({f.detail}); nothing ran — start it again once the fault is gone"
            raise
        rc = _context(run, run_id, digest, args, req.config, journal, lease, [started], progress, reporter, stop, runs)
        runner = Runner(req.backend, None, backend_factory)
        with stop_on_signals(rc.stop):
            return drive(WorkflowContext(rc, req.entry, {}, runner, is_async=_is_async(fn)), fn, args)
    finally:
        lease.release()


def _manifest(run_id: str, req: WorkflowRequest, args: Mapping[str, Any], digest: str) -> dict[str, Any]:
    return {
        "run_id": run_id, "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "tool_version": __version__,
        "host": socket.gethostname(), "kind": "workflow", "entry": req.entry, "args": args,
        "bundle": {"path": None, "name": req.entry, "digest": digest, "files": []}, "params": args,
        "backend": req.backend.to_json() if req.backend else None, "step_ids": [], "durable": True, "allow_model": False,
        "config": req.config.model_dump(mode="json", by_alias=True), "parent_run": req.parent_run, "child_runs": [],
    }


def _is_async(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__func__", None))


def _context(run: RunHandle, run_id: str, digest: str, args: Mapping[str, Any], config: DeployConfig, journal: JournalWriter,
             lease: RunLease, records: list[dict[str, Any]], progress: Progress | None, reporter: Reporter | None,
             stop: threading.Event | None, runs: Runs) -> RunContext:
    """A workflow run's context: no bundle and no desktop; its steps are its calls, those the journal has to begin with."""
    rc = make_context(run, run_id, journal, NoDesktop(), RunInputs(None, BoundParams(dict(args)), digest),
                      RunSetup(config, runs, progress=progress, reporter=reporter))
    rc.steps.update((s.id, s) for s in call_steps(records))
    rc.lease = lease
    rc.watch(records)
    if stop is not None:
        rc.stop = stop
    return rc


def drive(wctx: WorkflowContext, fn: Callable[..., Any], args: Mapping[str, Any]) -> RunOutcome:
    """Run the workflow function to its return, a pause, a halt, a block or a stop (engine.run_body, as a bundle's
    steps run); write the stop. A run whose code diverged from its journal is paused and refused."""
    rc = wctx.rc
    try:
        stop = run_body(rc, partial(_body, wctx, fn, args))
    except DivergedError as d:
        finish(rc, "PAUSED", str(d), "divergence", "awaiting_approval", d.step)
        raise RefusedError(str(d)) from None
    return finish(rc, *stop)


def _body(wctx: WorkflowContext, fn: Callable[..., Any], args: Mapping[str, Any]) -> None:
    """A workflow run's body: its own code. What that code raises (other than a divergence) is a halt."""
    token = ACTIVE.set(wctx)
    try:
        try:
            value = invoke(fn, (wctx,), dict(args))
            wctx.unreached()
            wctx.rc.journal.append("workflow_returned", None, {"result": jsonable(value, "the workflow")}, sync=True)
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


def continue_workflow(run: RunHandle, manifest: dict[str, Any], config: DeployConfig, lease: RunLease, journal: JournalWriter,
                      records: list[dict[str, Any]], state: str, dkey: bytes, runs: Runs, *, backend: BackendSpec | None,
                      require_approval: bool, progress: Progress | None, reporter: Reporter | None, backend_factory: BackendFactory,
                      stop: threading.Event | None) -> RunOutcome:
    """A workflow run's part of `flow resume` (runtime/resume.py opened it): apply the pending decision, then run the
    code again from the top on its journal."""
    try:
        fn = resolve_entry(manifest["entry"])
    except UsageError as e:
        raise RefusedError(f"{run.ref}: cannot load the run's workflow: {e}") from None
    run.reconcile_checkpoint(records)
    pending, approval, waiting = decision_for(run, journal, records, state, dkey, require_approval)
    if waiting is not None:
        return RunOutcome("PAUSED", RunState.PAUSED.exit_code, ref_path(run), waiting, pending["category"] if pending else None)
    rc = _context(run, manifest["run_id"], manifest["bundle"]["digest"], manifest["args"], config, journal, lease, records, progress,
                  reporter, stop, runs)
    journal.append("run_resumed", None, {"lease_generation": lease.generation, "pause_id": pending["pause_id"] if pending else None,
                                         "decision": approval["decision"] if approval else None,
                                         "operator": approval["operator"] if approval else None})
    run.write_state("RESUMING", journal=journal, last_checkpoint_seq=(rc.fold.checkpoint() or {}).get("seq"))
    records = records + journaled_deliveries(rc, records)
    records = records + apply_decision(rc, records, pending, approval)
    run.write_state("RUNNING", journal=journal, last_checkpoint_seq=(rc.fold.checkpoint() or {}).get("seq"))
    runner = Runner(backend or _manifest_backend(manifest), backend, backend_factory)
    wctx = WorkflowContext(rc, manifest["entry"], history(records), runner, is_async=_is_async(fn))
    with stop_on_signals(rc.stop):
        return drive(wctx, fn, manifest["args"])


def _manifest_backend(manifest: dict[str, Any]) -> BackendSpec | None:
    return BackendSpec.from_json(manifest["backend"]) if manifest.get("backend") else None


class Runner:
    """Starts or continues the child runs of `ctx.replay` and `ctx.child`, in this process, under their own leases."""

    def __init__(self, spec: BackendSpec | None, override: BackendSpec | None, factory: BackendFactory) -> None:
        self.spec = spec  # what a new child drives: the run's backend (or the resume's override)
        self.override = override  # what a continued child drives instead of its own manifest's backend
        self.factory = factory

    def replay(self, ctx: WorkflowContext, step: Step, bundle: str, params: dict[str, Any]) -> Any:
        child = ctx.rc.run.child(step.id)
        if child.has_manifest():
            out = self._continue(ctx, step, child, lambda: self._resume(ctx, child))
        else:
            req = ReplayRequest(bundle=_bundle_path(ctx.entry, bundle), params=params, backend=self.spec, config=ctx.rc.config,
                                run_dir=child.ref, durable=True)
            out = self._start(ctx, step, child, bundle, lambda: _runs(ctx).replay(req, ctx.rc.progress, ctx.rc.reporter, self.factory))
        return {"run_id": child.manifest()["run_id"], "run_dir": f"{CHILDREN}/{step.id}", "state": out.state}

    def child(self, ctx: WorkflowContext, step: Step, wf: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        child = ctx.rc.run.child(step.id)
        if child.has_manifest():
            self._continue(ctx, step, child, lambda: self._resume(ctx, child))
        else:
            try:
                named = inspect.signature(wf).bind(None, *args, **kwargs).arguments
            except TypeError as e:
                raise Halt("input", f"ctx.child({entry_of(wf)}): {e}", step=step.id) from None
            given = {k: v for k, v in list(named.items())[1:]}
            req = WorkflowRequest(entry_of(wf), given, self.spec, ctx.rc.config, run_dir=child.ref, parent_run=ctx.run_id,
                                  probe_backend=False)
            self._start(ctx, step, child, req.entry,
                        lambda: _runs(ctx).start_workflow(req, ctx.rc.progress, ctx.rc.reporter, self.factory, ctx.rc.stop))
        return workflow_result(child)

    def _resume(self, ctx: WorkflowContext, child: RunHandle) -> RunOutcome:
        """The one resume, for a bundle child as for a workflow child."""
        return _runs(ctx).resume(child, backend=self.override, progress=ctx.rc.progress, reporter=ctx.rc.reporter,
                                 backend_factory=self.factory, stop=ctx.rc.stop)

    def _start(self, ctx: WorkflowContext, step: Step, child: RunHandle, what: str, start: Callable[[], RunOutcome]) -> RunOutcome:
        child.discard()  # a start that died before its manifest: nothing ran there
        ctx.rc.journal.append("child_started", step.id, {"run_dir": f"{CHILDREN}/{step.id}", "what": what}, sync=True)
        try:
            out = start()
        except FlowError as e:  # bad bundle, params or backend: the operator fixes it, then continue retries the call
            raise Halt(getattr(e, "kind", None) or "input", f"{step.action} {what}: {e}", step=step.id) from None
        return self._outcome(step, child, out)

    def _continue(self, ctx: WorkflowContext, step: Step, child: RunHandle, go: Callable[[], RunOutcome]) -> RunOutcome:
        waiting = child_waiting(child)
        if waiting is None:
            try:
                return self._outcome(step, child, go())
            except RefusedError as e:
                waiting = f"child run {child.ref}: {e}"
        raise Pause("awaiting_child", step.id, f"{waiting}; then flow resume {ctx.rc.run.ref}", category="child")

    @staticmethod
    def _outcome(step: Step, child: RunHandle, out: RunOutcome) -> RunOutcome:
        if out.state == "COMPLETED":
            return out
        if out.state == "PAUSED":
            raise Pause("awaiting_child", step.id, child_waiting(child) or f"child run {child.ref} is PAUSED: {out.message}", category="child")
        if out.state == "INTERRUPTED":
            raise StopRequested()
        if out.state == "BLOCKED":
            raise PolicyBlock("child_blocked", "BLOCKED", None, step.id, f"child run {child.ref} ended BLOCKED: {out.message}")
        raise Halt("child", f"child run {child.ref} ended {out.state}: {out.message}", step=step.id)


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
