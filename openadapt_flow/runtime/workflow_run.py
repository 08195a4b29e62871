"""Starting, resuming and waiting on Python workflow runs (SPEC §14), on the engine's own machinery.

A workflow run is a durable run whose manifest says `"kind": "workflow"` and names its entry
(`module:function`) and args. Its journal holds one `step_started` header per call, then the
call's records and its `step_verified` result. `flow resume` re-imports the entry and runs it
again from the top: recorded calls return at once (see workflow_ctx). `ctx.replay` and
`ctx.child` run as child runs in `children/<call id>/`, started by engine.replay / start_workflow
and continued by resume.resume / resume_workflow, in the same process. `wait` is in workflow_wait.
"""

from __future__ import annotations

import hashlib
import inspect
import shutil
import socket
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openadapt_flow import __version__
from openadapt_flow.backends.base import Backend
from openadapt_flow.backends.spec import BackendSpec, open_backend
from openadapt_flow.bundle.loader import LoadedBundle
from openadapt_flow.bundle.models import Step
from openadapt_flow.bundle.params import BoundParams
from openadapt_flow.errors import FlowError, RefusedError, UsageError
from openadapt_flow.runtime import resume as bundle_resume
from openadapt_flow.runtime.config import DeployConfig
from openadapt_flow.runtime.context import Progress, RunContext
from openadapt_flow.runtime.decisions import check_approval
from openadapt_flow.runtime.truth import catch_up_state, check_views, consume_decision, pending_view
from openadapt_flow.runtime.engine import NoDesktop, ReplayRequest, Reporter, RunOutcome, finish, make_context, replay, stop_on_signals, write_incident
from openadapt_flow.runtime.halt import Halt, Pause, StopRequested
from openadapt_flow.runtime.lifecycle import LIVE_STATES, check_manifest, effective_state, finalize_interrupted
from openadapt_flow.runtime.outcome import RECONCILIATION_REQUIRED
from openadapt_flow.runtime.policy import Blocked
from openadapt_flow.runtime.states import EXIT_CODES
from openadapt_flow.runtime.workflow import ACTIVE, bind_args, entry_of, resolve_entry
from openadapt_flow.runtime.workflow_ctx import (
    DivergedError, WorkflowContext, WorkflowStop, call_steps, history, invoke, journal_bundle, jsonable,
)
from openadapt_flow.runtime.workflow_wait import workflow_result
from openadapt_flow.store.checkpoint import checkpoint_from_records, reconcile_checkpoint, write_checkpoint
from openadapt_flow.store import ledger
from openadapt_flow.store.escalation import APPROVAL, DECISIONS, PENDING, read_json_file, remove
from openadapt_flow.store.journal import Journal
from openadapt_flow.store.keys import load_decision_key, load_key
from openadapt_flow.store.lease import Lease, LeaseLost
from openadapt_flow.store.rundir import CHILDREN, MANIFEST, RunDir, check_new_run_dir, new_run_dir

BackendFactory = Callable[[BackendSpec], Backend]


@dataclass
class WorkflowRequest:
    entry: str  # module:function (or module:Agent.method)
    args: Mapping[str, Any]
    backend: BackendSpec | None  # what ctx.replay drives
    config: DeployConfig
    run_dir: Path | None = None
    args_from_text: bool = False  # `--arg k=v`: coerce to the function's annotations
    parent_run: str | None = None
    probe_backend: bool = True  # connect once before the run dir exists: an unreachable desktop is bad input


def run_bundle(manifest: dict[str, Any], records: list[dict[str, Any]]) -> LoadedBundle:
    return journal_bundle(manifest["entry"], manifest["bundle"]["digest"], call_steps(records))


def _source_digest(fn: Callable[..., Any], entry: str) -> str:
    try:
        data = Path(inspect.getsourcefile(fn) or "").read_bytes()
    except (OSError, TypeError):
        data = entry.encode()
    return "sha256:" + hashlib.sha256(data).hexdigest()


def start_workflow(req: WorkflowRequest, progress: Progress | None = None, reporter: Reporter | None = None,
                   backend_factory: BackendFactory = open_backend, stop: threading.Event | None = None) -> RunOutcome:
    """Start a workflow run. Bad input (unknown entry, bad args, unreachable backend) raises before any run dir exists."""
    fn = resolve_entry(req.entry)
    args = bind_args(fn, req.args, from_text=req.args_from_text)
    if req.run_dir is not None:
        check_new_run_dir(req.run_dir)
    key = load_key(create=True)
    load_decision_key(create=True)  # workflows are always durable: the first run creates it
    if req.backend is not None and req.probe_backend:
        backend_factory(req.backend).close()
    run = RunDir(new_run_dir(Path(req.config.runtime.runs_root), req.run_dir))
    run_id = f"run-{uuid.uuid4().hex[:12]}"
    digest = _source_digest(fn, req.entry)
    run.write_json(MANIFEST, "manifest@1", {
        "run_id": run_id, "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "tool_version": __version__,
        "host": socket.gethostname(), "kind": "workflow", "entry": req.entry, "args": args,
        "bundle": {"path": None, "name": req.entry, "digest": digest, "files": []}, "params": args,
        "backend": req.backend.to_json() if req.backend else None, "step_ids": [], "durable": True, "allow_model": False,
        "config": req.config.model_dump(mode="json", by_alias=True), "parent_run": req.parent_run, "child_runs": [],
    })
    lease = Lease(run.path, req.config.runtime.lease_ttl_s).acquire()
    lease.start_heartbeat()
    try:
        journal = Journal(run.journal_path, key)
        rc = _context(run, run_id, journal_bundle(req.entry, digest, []), args, req.config, journal, lease, [], progress, reporter, stop)
        run.write_state("RUNNING", journal=journal)
        journal.append("run_started", None, {"kind": "workflow", "entry": req.entry, "durable": True, "lease_generation": lease.generation,
                                             "manifest_digest": run.manifest_digest()})
        runner = Runner(req.backend, None, backend_factory)
        with stop_on_signals(rc.stop):
            return drive(WorkflowContext(rc, req.entry, {}, runner, is_async=_is_async(fn)), fn, args)
    finally:
        lease.release()


def _is_async(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__func__", None))


def _context(run: RunDir, run_id: str, loaded: LoadedBundle, args: Mapping[str, Any], config: DeployConfig, journal: Journal,
             lease: Lease, records: list[dict[str, Any]], progress: Progress | None, reporter: Reporter | None,
             stop: threading.Event | None) -> RunContext:
    rc = make_context(run, run_id, loaded, BoundParams(dict(args)), NoDesktop(), config, journal, False, True, progress, reporter)
    rc.lease = lease
    rc.watch(records)
    rc.verified = [r for r in records if r["type"] in ("step_verified", "step_skipped")]
    if stop is not None:
        rc.stop = stop
    return rc


def drive(wctx: WorkflowContext, fn: Callable[..., Any], args: Mapping[str, Any]) -> RunOutcome:
    """Run the workflow function to its return, a pause, a halt, a block or a stop; write the stop like the engine."""
    rc = wctx.rc
    state, message, category, reason, at = "COMPLETED", "", None, None, None
    token = ACTIVE.set(wctx)
    try:
        try:
            value = invoke(fn, (wctx,), dict(args))
            wctx.unreached()
            rc.journal.append("workflow_returned", None, {"result": jsonable(value, "the workflow")}, sync=True)
        except WorkflowStop as s:
            raise s.cause from None
    except LeaseLost:
        rc.frames.close()
        rc.journal.close()
        raise
    except DivergedError as d:
        finish(rc, "PAUSED", str(d), "divergence", "awaiting_approval", d.step)
        raise RefusedError(str(d)) from None
    except Blocked as b:
        state, message, category, at = "BLOCKED", b.message, "policy", b.step
        write_incident(rc, b)
    except StopRequested:
        state, message = "INTERRUPTED", "stopped by signal at a call boundary; no call was in flight"
        rc.journal.append("interrupted", None, {"message": message, "input_pending": False})
    except Pause as p:
        state, reason, message, category, at = "PAUSED", p.reason, p.message, p.category, p.step
    except Exception as e:  # a halt, or the workflow's own code raised: a durable halt pauses for an operator
        h = e if isinstance(e, Halt) else Halt("workflow", f"the workflow raised {type(e).__name__}: {e}{_where(e)}")
        rc.journal.append("halted", h.step, {"category": h.category, "message": h.message, "input_sent": h.dispatched})
        state, reason, message, category, at = "PAUSED", "awaiting_approval", h.message, h.category, h.step
    finally:
        ACTIVE.reset(token)
    return finish(rc, state, message, category, reason, at)


def _where(e: BaseException) -> str:
    frames = traceback.extract_tb(e.__traceback__)
    return f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""


def resume_workflow(run: RunDir, manifest: dict[str, Any], *, backend: BackendSpec | None = None, require_approval: bool = False,
                    params: Mapping[str, Any] | None = None, progress: Progress | None = None, reporter: Reporter | None = None,
                    backend_factory: BackendFactory = open_backend, stop: threading.Event | None = None) -> RunOutcome:
    """Continue a workflow run: apply the pending decision, then run the code again from the top on its journal."""
    if params:
        raise RefusedError(f"{run.path}: a workflow run keeps the args it started with; --param is not accepted")
    config = DeployConfig.model_validate(manifest["config"])
    lease = Lease(run.path, config.runtime.lease_ttl_s).acquire()
    journal: Journal | None = None
    try:
        journal, records = Journal.open_existing(run.journal_path, load_key(create=False))
        dkey = load_decision_key(create=False)
        check_manifest(run, records)  # entry, args, backend and config are pinned by the journal's first record
        state = catch_up_state(run, records, journal, check_views(run, records, journal.key))
        if state["state"] in LIVE_STATES:
            finalize_interrupted(run, journal, records, run_bundle(manifest, records).model, "owner process died; found by resume")
            state = run.state()
        if state["state"] in ("COMPLETED", "FAILED", "BLOCKED"):
            return RunOutcome(state["state"], EXIT_CODES[state["state"]], run.path, "run is already terminal; nothing to do")
        try:
            fn = resolve_entry(manifest["entry"])
        except UsageError as e:
            raise RefusedError(f"{run.path}: cannot load the run's workflow: {e}") from None
        reconcile_checkpoint(run.path, records)
        pending, approval, waiting = _decision(run, journal, records, state["state"], dkey, require_approval)
        if waiting is not None:
            return RunOutcome("PAUSED", EXIT_CODES["PAUSED"], run.path, waiting, pending["category"] if pending else None)
        rc = _context(run, manifest["run_id"], run_bundle(manifest, records), manifest["args"], config, journal, lease, records, progress, reporter, stop)
        journal.append("run_resumed", None, {"lease_generation": lease.generation, "pause_id": pending["pause_id"] if pending else None,
                                             "decision": approval["decision"] if approval else None,
                                             "operator": approval["operator"] if approval else None})
        run.write_state("RESUMING", journal=journal, last_checkpoint_seq=(checkpoint_from_records(rc.verified) or {}).get("seq"))
        records = records + _journaled_deliveries(rc, records)
        records = records + _apply(rc, records, pending, approval)
        run.write_state("RUNNING", journal=journal, last_checkpoint_seq=(checkpoint_from_records(rc.verified) or {}).get("seq"))
        runner = Runner(backend or _manifest_backend(manifest), backend, backend_factory)
        wctx = WorkflowContext(rc, manifest["entry"], history(records), runner, is_async=_is_async(fn))
        with stop_on_signals(rc.stop):
            return drive(wctx, fn, manifest["args"])
    finally:
        if journal is not None:
            journal.close()
        lease.release()


def _decision(run: RunDir, journal: Journal, records: list[dict[str, Any]], state: str, dkey: bytes, require_approval: bool
              ) -> tuple[dict[str, Any] | None, dict[str, Any] | None, str | None]:
    """The pause to resolve and its checked approval, or why the run must go on waiting. RefusedError if not allowed."""
    pending = pending_view(run, records, dkey)  # the journal's open pause; the file must agree with it
    if pending is not None and state != "PAUSED" and not _delivered_for(run, pending):
        # the process died while pausing, before any decision could reach it: running again re-derives the pause
        journal.append("escalation_dropped", pending["step"], {"pause_id": pending["pause_id"], "why": f"run was {state}"})
        remove(run.path / PENDING)
        pending = None
    waiting = None if require_approval else _waiting(run, pending)
    if waiting is not None:
        return pending, None, waiting
    if not (require_approval or (pending is not None and ((run.path / APPROVAL).exists() or pending["paused_reason"] == "awaiting_approval"))):
        return pending, None, None
    if pending is None:
        raise RefusedError(f"{run.path}: --require-approval, but nothing is pending for an operator to approve")
    approval = check_approval(run, pending, dkey)
    if approval["decision"] == "continue" and pending.get("transaction_outcome") == RECONCILIATION_REQUIRED:
        raise RefusedError(f"{run.path}: call {pending['step']!r} is uncertain; continue would re-run it blindly — "
                           "an operator must reconcile it (flow approve --decision reconcile --effect landed|absent)")
    return pending, approval, None


def _delivered_for(run: RunDir, pending: dict[str, Any]) -> bool:
    """Did an operator decide this pause (a resume that was using the decision died before journaling it)?"""
    try:
        approval = read_json_file(run.path / APPROVAL, "approval")
    except RefusedError:
        return True  # unreadable: check_approval names what is wrong with it
    return approval is not None and approval.get("pause_id") == pending["pause_id"]


def _manifest_backend(manifest: dict[str, Any]) -> BackendSpec | None:
    return BackendSpec.from_json(manifest["backend"]) if manifest.get("backend") else None


def _apply(rc: RunContext, records: list[dict[str, Any]], pending: dict[str, Any] | None, approval: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Journal the operator's decision; an answer or signal becomes the waiting call's recorded result."""
    if pending is None:
        return []
    new: list[dict[str, Any]] = []
    if approval is not None:
        data = {k: approval.get(k) for k in ("pause_id", "decision", "effect", "operator", "os_user", "note")}
        if approval["decision"] in ("answer", "signal"):  # the journal carries what was delivered: the point of no return
            data["value"] = _payload_value(approval)
        decision = rc.journal.append("decision", pending["step"], data)
        new += [decision] + _record_delivery(rc, records, decision)
        consume_decision(rc.run, rc.journal, pending, approval)  # journaled above, marked used in the run ledger, moved
    remove(rc.run.path / PENDING)
    return new


def _payload_value(approval: dict[str, Any]) -> Any:
    payload = approval.get("payload") or {}
    return payload.get("value") if approval.get("decision") == "answer" else payload.get("data")


def _record_delivery(rc: RunContext, records: list[dict[str, Any]], decision: dict[str, Any]) -> list[dict[str, Any]]:
    """A journaled answer or signal becomes its waiting call's recorded result (once: not if it already is)."""
    d, step = decision["data"], decision["step"]
    header = next((r for r in records if r["type"] == "step_started" and r["step"] == step), None)
    done = any(r["type"] == "step_verified" and r["step"] == step for r in records)
    if d.get("decision") not in ("answer", "signal") or header is None or done:
        return []
    value = d["value"] if "value" in d else _payload_value(read_json_file(rc.run.path / DECISIONS / f"{d['pause_id']}.json", "decision") or {})
    rec = rc.journal.append("step_verified", step, {"index": header["data"]["index"], "verified_by": "operator", "result": value,
                                                   "operator": d.get("operator"), "screen_facts": []})
    rc.verified.append(rec)
    write_checkpoint(rc.run.path, checkpoint_from_records(rc.verified) or {})
    return [rec]


def _journaled_deliveries(rc: RunContext, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Answers and signals a resume journaled, then died before recording as their calls' results: applied from the
    journal now, and marked used in the run ledger (their approval files were retired by pending_view)."""
    new: list[dict[str, Any]] = []
    for call in history(records).values():
        d = call.last("decision")
        if call.verified is not None or d is None or d["data"].get("decision") not in ("answer", "signal"):
            continue
        new += _record_delivery(rc, records + new, d)
        ledger.consume(rc.run_id, rc.run.path, d["data"]["pause_id"], d["data"]["decision"], d["seq"], d["hash"])
    return new


def _waiting(run: RunDir, pending: dict[str, Any] | None) -> str | None:
    """Why this pause cannot continue yet (nothing delivered, timer not due, child still paused), or None."""
    if pending is None:
        return None
    reason, step = pending["paused_reason"], pending["step"]
    if reason == "awaiting_child":
        return child_waiting(run.path / CHILDREN / step)
    if reason == "awaiting_timer" and not (run.path / APPROVAL).exists():
        due = pending.get("due_epoch") or 0
        return f"timer of call {step!r} is due in {due - time.time():.1f}s" if time.time() < due else None
    if reason in ("awaiting_user", "awaiting_signal") and not (run.path / APPROVAL).exists():
        return f"still {reason} at call {step!r} (flow {'answer' if reason == 'awaiting_user' else 'signal'} {run.path} …)"
    return None


def child_waiting(child: Path) -> str | None:
    """Why a paused child run cannot continue yet, or None (it is ready, or not paused at all)."""
    if not (child / MANIFEST).is_file():
        return None
    st = effective_state(RunDir(child))
    if st.get("state") != "PAUSED":
        return None
    pending = read_json_file(child / PENDING, "pending escalation") or {}
    reason, step = pending.get("paused_reason"), pending.get("step")
    if reason == "awaiting_child":
        return child_waiting(child / CHILDREN / str(step))
    if reason == "awaiting_timer":
        due = pending.get("due_epoch") or 0
        return f"child run {child}: timer due in {due - time.time():.1f}s" if time.time() < due else None
    if (child / APPROVAL).exists():
        return None
    how = {"awaiting_user": "flow answer", "awaiting_signal": "flow signal"}.get(str(reason), "flow approve")
    return f"child run {child} is PAUSED({reason}) at {step!r}: {st.get('message') or ''} — decide there ({how} {child})"


class Runner:
    """Starts or continues the child runs of `ctx.replay` and `ctx.child`, in this process, under their own leases."""

    def __init__(self, spec: BackendSpec | None, override: BackendSpec | None, factory: BackendFactory) -> None:
        self.spec = spec  # what a new child drives: the run's backend (or the resume's override)
        self.override = override  # what a continued child drives instead of its own manifest's backend
        self.factory = factory

    def replay(self, ctx: WorkflowContext, step: Step, bundle: str, params: dict[str, Any]) -> Any:
        child = ctx.rc.run.path / CHILDREN / step.id
        if (child / MANIFEST).is_file():
            out = self._continue(ctx, step, child, lambda: bundle_resume.resume(
                child, backend=self.override, progress=ctx.rc.progress, reporter=ctx.rc.reporter, backend_factory=self.factory, stop=ctx.rc.stop))
        else:
            req = ReplayRequest(bundle=_bundle_path(ctx.entry, bundle), params=params, backend=self.spec, config=ctx.rc.config,
                                run_dir=child, durable=True)
            out = self._start(ctx, step, child, bundle, lambda: replay(req, ctx.rc.progress, ctx.rc.reporter, self.factory))
        manifest = RunDir(child).manifest()
        return {"run_id": manifest["run_id"], "run_dir": str(child.relative_to(ctx.rc.run.path)), "state": out.state}

    def child(self, ctx: WorkflowContext, step: Step, wf: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        child = ctx.rc.run.path / CHILDREN / step.id
        if (child / MANIFEST).is_file():
            self._continue(ctx, step, child, lambda: resume_workflow(
                RunDir(child), RunDir(child).manifest(), backend=self.override, progress=ctx.rc.progress, reporter=ctx.rc.reporter,
                backend_factory=self.factory, stop=ctx.rc.stop))
        else:
            try:
                named = inspect.signature(wf).bind(None, *args, **kwargs).arguments
            except TypeError as e:
                raise Halt("input", f"ctx.child({entry_of(wf)}): {e}", step=step.id) from None
            given = {k: v for k, v in list(named.items())[1:]}
            req = WorkflowRequest(entry_of(wf), given, self.spec, ctx.rc.config, run_dir=child, parent_run=ctx.run_id, probe_backend=False)
            self._start(ctx, step, child, req.entry, lambda: start_workflow(req, ctx.rc.progress, ctx.rc.reporter, self.factory, ctx.rc.stop))
        return workflow_result(child)

    def _start(self, ctx: WorkflowContext, step: Step, child: Path, what: str, start: Callable[[], RunOutcome]) -> RunOutcome:
        shutil.rmtree(child, ignore_errors=True)  # a start that died before its manifest: nothing ran there
        ctx.rc.journal.append("child_started", step.id, {"run_dir": str(child.relative_to(ctx.rc.run.path)), "what": what}, sync=True)
        try:
            out = start()
        except FlowError as e:  # bad bundle, params or backend: the operator fixes it, then continue retries the call
            raise Halt(getattr(e, "kind", None) or "input", f"{step.action} {what}: {e}", step=step.id) from None
        return self._outcome(step, child, out)

    def _continue(self, ctx: WorkflowContext, step: Step, child: Path, go: Callable[[], RunOutcome]) -> RunOutcome:
        waiting = child_waiting(child)
        if waiting is None:
            try:
                return self._outcome(step, child, go())
            except RefusedError as e:
                waiting = f"child run {child}: {e}"
        raise Pause("awaiting_child", step.id, f"{waiting}; then flow resume {ctx.rc.run.path}", category="child")

    @staticmethod
    def _outcome(step: Step, child: Path, out: RunOutcome) -> RunOutcome:
        if out.state == "COMPLETED":
            return out
        if out.state == "PAUSED":
            raise Pause("awaiting_child", step.id, child_waiting(child) or f"child run {child} is PAUSED: {out.message}", category="child")
        if out.state == "INTERRUPTED":
            raise StopRequested()
        if out.state == "BLOCKED":
            raise Blocked("child_blocked", "BLOCKED", None, step.id, f"child run {child} ended BLOCKED: {out.message}")
        raise Halt("child", f"child run {child} ended {out.state}: {out.message}", step=step.id)


def _bundle_path(entry: str, bundle: str) -> Path:
    """A relative bundle path is looked up from the current directory, then beside the workflow's module."""
    p = Path(bundle).expanduser()
    if p.is_absolute() or p.exists():
        return p.resolve()
    source = getattr(sys.modules.get(entry.partition(":")[0]), "__file__", None)
    beside = Path(source).parent / p if source else p
    return beside.resolve() if beside.exists() else p
