"""`flow resume`: continue a paused or interrupted durable run from its last verified checkpoint (SPEC §8–§10).

One resume for every kind of run: it opens the run (lease, journal, views caught up, a dead owner's run finalised),
then continues a bundle run here and a Python workflow's run in workflow_run.continue_workflow.
Never re-performs a checkpointed step; never blind-retries an uncertain one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from openadapt_flow.backends.factory import open_backend
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.loader import LoadedBundle, load_bundle
from openadapt_flow.bundle.params import BoundParams, bind_params, secret_env_name
from openadapt_flow.errors import FlowError, RefusedError, UsageError
from openadapt_flow.runtime.act.backend_select import BackendFlags, merge_backend, select_backend
from openadapt_flow.runtime.decide.calls import call_steps
from openadapt_flow.runtime.decide.config import BackendConfig, DeployConfig
from openadapt_flow.runtime.act.context import Progress, RunContext
from openadapt_flow.runtime.operate.decisions import block_run, check_approval
from openadapt_flow.runtime.act.durable import record_verified
from openadapt_flow.runtime.act.engine import execute, finish, make_context, open_or_none, stop_on_signals
from openadapt_flow.runtime.decide.halt import Halt
from openadapt_flow.runtime.act.launch import BackendFactory, Reporter, RunOutcome, Runs
from openadapt_flow.runtime.act.lifecycle import check_manifest, effective_state, finalize_interrupted, queued
from openadapt_flow.runtime.act.fixture_resume import refuse_restarted_fixture
from openadapt_flow.runtime.act.preflight import check_settings, probe_effects
from openadapt_flow.runtime.act.runref import RunRef, open_ref, ref_path, run_name
from openadapt_flow.runtime.act.recheck import (CONFIRMED_DONE, POSITIVELY_ABSENT, RETRYABLE, RecheckResult, Uncertain, check_facts,
                                            find_uncertain, recheck)
from openadapt_flow.store.states import FINAL_STATES, LIVE_STATES, RunState
from openadapt_flow.runtime.act.step import screen_facts
from openadapt_flow.runtime.operate.teach import effective_bundle
from openadapt_flow.runtime.operate.truth import catch_up_state, check_views, consume_decision, journaled_decision, pending_view, record_decision
from openadapt_flow.runtime.operate.upgrade import upgrade_bundle as adopt_upgrade
from openadapt_flow.runtime.workflow.run import continue_workflow
from openadapt_flow.store.atomic import StorageFault
from openadapt_flow.store.base import JournalWriter, RunHandle, RunLease
from openadapt_flow.store.keys import load_decision_key, load_key


def _params(loaded: LoadedBundle, manifest: dict[str, Any], given: Mapping[str, Any]) -> BoundParams:
    recorded = {k: v for k, v in manifest["params"].items() if not (isinstance(v, dict) and "secret_env" in v)}
    params = bind_params(loaded.model, recorded)
    for k, v in given.items():
        if k not in params.values or str(params.values[k]) != str(bind_params(loaded.model, {**recorded, k: v}).values[k]):
            raise RefusedError(f"--param {k}={v!r} differs from the run's bound value; a run keeps its params")
    for name, spec in loaded.model.params.items():
        if spec.secret and spec.required and name not in params.secrets:
            raise RefusedError(f"secret param {name!r} must be in the environment ({secret_env_name(name)}) to resume")
    return params


def _backend_spec(manifest: dict[str, Any], override: BackendSpec | None, flags: BackendFlags | None = None,
                  config: BackendConfig | None = None) -> BackendSpec | None:
    """The backend resume drives: a whole `override` spec; else the flags merged field by field onto `config`'s
    backend section (`--config`) when it names one, or onto the run's recorded backend (its manifest)."""
    if override is not None:
        return override
    flags = flags or BackendFlags()
    if config is not None and (config.kind or config.url):
        return select_backend(config, backend=flags.backend, url=flags.url, rdp_host=flags.rdp_host)
    recorded = BackendSpec.from_json(manifest["backend"]) if manifest.get("backend") else None
    return merge_backend(recorded, flags) if flags else recorded


def resume(
    ref: RunRef,
    runs: Runs,
    *,
    backend: BackendSpec | None = None,
    require_approval: bool = False,
    params: Mapping[str, Any] | None = None,
    progress: Progress | None = None,
    reporter: Reporter | None = None,
    backend_factory: BackendFactory = open_backend,
    stop: threading.Event | None = None,
    backend_flags: BackendFlags | None = None,
    backend_config: BackendConfig | None = None,
    upgrade_bundle: Path | None = None,
) -> RunOutcome:
    """Continue a paused or interrupted durable run of either kind, a bundle's or a Python workflow's (SPEC §14: its
    code runs again on its journal); `stop` (e.g. a worker's) is set by SIGTERM/SIGINT.

    `backend_flags` and `backend_config` (`--config`'s backend section) override the recorded backend field by field.
    """
    run = open_ref(ref)
    if queued(run):  # submitted (SPEC §19), never started: its start job, not a resume, begins it
        raise RefusedError(f"{run.ref}: queued for a fleet worker (submitted, not started yet); nothing to resume; refusing")
    manifest = run.manifest()
    if backend_flags or backend_config is not None:
        backend = _backend_spec(manifest, backend, backend_flags, backend_config)
    workflow = manifest.get("kind") == "workflow"
    if workflow and upgrade_bundle is not None:
        raise UsageError("--upgrade-bundle applies to bundle runs, not to a Python workflow's run")
    if workflow and params:
        raise RefusedError(f"{run.ref}: a workflow run keeps the args it started with; --param is not accepted")
    if not workflow and not manifest.get("durable"):
        raise RefusedError(f"{run.ref}: a non-durable run cannot be resumed (replay with --durable)")
    config = DeployConfig.model_validate(manifest["config"])
    lease = run.lease(config.runtime.lease_ttl_s).acquire()
    journal: JournalWriter | None = None
    try:
        journal, records = run.open_journal(load_key(create=False))
        check_manifest(run, records)  # params (args), backend and config are pinned by the journal's first record
        dkey = load_decision_key(create=False)
        loaded = None if workflow else effective_bundle(run, manifest, records)
        state = catch_up_state(run, records, journal, check_views(run, records, journal.key))
        if state["state"] in LIVE_STATES:
            steps = call_steps(records) if loaded is None else loaded.model.steps
            finalize_interrupted(run, journal, records, steps, "owner process died; found by resume")
            state = run.state()
        if state["state"] in FINAL_STATES:
            return RunOutcome(state["state"], RunState(state["state"]).exit_code, ref_path(run), "run is already terminal; nothing to do")
        if loaded is None:
            return continue_workflow(run, manifest, config, lease, journal, records, state["state"], dkey, runs, backend=backend,
                                     require_approval=require_approval, progress=progress, reporter=reporter,
                                     backend_factory=backend_factory, stop=stop)
        how = _How(backend, require_approval, params or {}, progress, reporter, backend_factory, stop, upgrade_bundle)
        return _continue_bundle(run, manifest, config, lease, journal, records, state["state"], dkey, loaded, runs, how)
    finally:
        if journal is not None:
            journal.close()
        lease.release()


@dataclass(frozen=True)
class _How:
    """How a bundle run is resumed (the flags of `flow resume`)."""

    backend: BackendSpec | None
    require_approval: bool
    params: Mapping[str, Any]
    progress: Progress | None
    reporter: Reporter | None
    backend_factory: BackendFactory
    stop: threading.Event | None
    upgrade_bundle: Path | None


def _continue_bundle(run: RunHandle, manifest: dict[str, Any], config: DeployConfig, lease: RunLease, journal: JournalWriter,
                     records: list[dict[str, Any]], state: str, dkey: bytes, loaded: LoadedBundle, runs: Runs, how: _How) -> RunOutcome:
    """A bundle run's part of resume: its decision, then the step loop from the checkpoint (or the uncertain step)."""
    orphan = _orphaned(manifest)
    if orphan:
        journal.append("suspended", None, {"reason": orphan})
        journal.close()
        run.write_state("PAUSED", journal=journal, paused_reason="suspended_orphan", message=orphan)
        return RunOutcome("PAUSED", RunState.PAUSED.exit_code, ref_path(run), orphan)
    if how.upgrade_bundle is not None:
        loaded = adopt_upgrade(run, journal, records, loaded, manifest, how.upgrade_bundle)
    bound = _params(loaded, manifest, how.params)
    check_settings(loaded, config, bound, bool(manifest.get("allow_model")))  # every missing setting, before any input
    cp, _how = run.reconcile_checkpoint(records)
    decided = _decide(run, journal, records, state, dkey, how.require_approval)
    if isinstance(decided, RunOutcome):
        return decided
    pending, approval, carried = decided
    patch = None
    if approval is not None and approval["decision"] == "teach":
        patch = approval["payload"]
        loaded = load_bundle(run.artifact_dir(patch["bundle_dir"]))  # resolved afresh with the taught target
        if loaded.digest != patch["digest"]:
            raise RefusedError(f"{patch['bundle_dir']}: taught bundle differs from the approved patch; refusing")
    live = open_or_none(_backend_spec(manifest, how.backend), how.backend_factory)
    try:
        refuse_restarted_fixture(live, run.ref, manifest, records)  # before any input, the decision left unused
        # every system of record that steps still to come will read answers now, before any input
        probe_effects(loaded, config, bound, manifest["run_id"], started={r["step"] for r in records if r["type"] == "step_started"})
        ctx = make_context(run, manifest["run_id"], loaded, bound, live, config, journal, bool(manifest.get("allow_model")), True,
                           how.progress, how.reporter, runs=runs)
        ctx.lease = lease
        ctx.watch(records)
        if how.stop is not None:
            ctx.stop = how.stop
        if patch is not None and not any(r["type"] == "patched" and r["data"].get("pause_id") == patch["pause_id"] for r in records):
            journal.append("patched", patch["step"], {k: patch[k] for k in ("pause_id", "bundle_dir", "digest", "template", "region", "point")})
        with stop_on_signals(ctx.stop):
            return _continue(ctx, records, cp, pending, approval, carried)
    finally:
        live.close()


def _decide(run: RunHandle, journal: JournalWriter, records: list[dict[str, Any]], state: str, dkey: bytes, require_approval: bool
            ) -> RunOutcome | tuple[dict[str, Any] | None, dict[str, Any] | None, dict[str, Any] | None]:
    """The pause to resolve, its checked approval and the journaled decision carried over (or how the run stays)."""
    pending = pending_view(run, records, dkey)  # the journal's open pause; the file must agree with it
    if pending is not None and state == "INTERRUPTED":
        _restore_pause(run, journal, pending)
    approval = None
    carried = journaled_decision(records) if pending is None else None  # decided, then killed before it took effect
    if carried is not None:
        _, pending, approval = carried
        if approval["decision"] == "reject":  # killed between the reject's record and the run's end: end it now
            block_run(run, journal, pending, approval, carried[0])
            return RunOutcome("BLOCKED", RunState.BLOCKED.exit_code, ref_path(run), f"rejected by {approval['operator']}")
    waiting = _still_waiting(run, pending) if not require_approval and carried is None else None
    if waiting is not None:
        journal.close()
        return RunOutcome("PAUSED", RunState.PAUSED.exit_code, ref_path(run), waiting, pending["category"] if pending else None)
    needs_decision = pending is not None and (pending["paused_reason"] == "awaiting_approval" or run.has_approval())
    if (needs_decision or require_approval) and carried is None:
        if pending is None:
            raise RefusedError(f"{run.ref}: --require-approval, but nothing is pending for an operator to approve")
        approval = check_approval(run, pending, dkey)
    return pending, approval, carried[0] if carried else None


def _continue(ctx: RunContext, records: list[dict[str, Any]], cp: dict[str, Any] | None, pending: dict[str, Any] | None,
              approval: dict[str, Any] | None, carried: dict[str, Any] | None) -> RunOutcome:
    try:
        start = _reenter(ctx, records, cp, pending, approval, carried)
        return start if isinstance(start, RunOutcome) else execute(ctx, start)
    except StorageFault as f:  # a full disk before the first step: INTERRUPTED (exit 5), resumable once space is freed
        return finish(ctx, "INTERRUPTED", f.message, "storage")
    finally:
        ctx.frames.close()  # never exit with the frame writer alive (a C++ abort at interpreter shutdown)


def _reenter(ctx: RunContext, records: list[dict[str, Any]], cp: dict[str, Any] | None, pending: dict[str, Any] | None,
             approval: dict[str, Any] | None, carried: dict[str, Any] | None = None) -> int | RunOutcome:
    """Re-check, re-prove, journal the decision, apply it; the index to continue at (or the pause it ended in).

    The `decision` record is the point of no return: it is journaled (whole) before the decision takes any effect, so a
    resume killed after it finds it (`carried`) and applies it from the journal — never asking again, never journaling
    a second one. What it authorises happens at most once: its first effect (a dispatch, a checkpoint) spends it."""
    run, journal = ctx.run, ctx.journal
    decision = approval["decision"] if approval else None
    journal.append("run_resumed", None, {"lease_generation": ctx.lease_generation, "decision": decision,
                                          "pause_id": pending["pause_id"] if pending else None,
                                          "operator": approval["operator"] if approval else None,
                                          "decision_seq": carried["seq"] if carried else None})
    prev = {k: v for k, v in run.state().items() if k != "schema"}
    run.write_state("RESUMING", journal=journal, last_checkpoint_seq=cp["seq"] if cp else None)
    start = ctx.fold.next_index  # the step after the last verified one, folded from the journal
    rec = carried
    try:
        steps = ctx.model.steps
        uncertain = find_uncertain(records, steps)
        result = recheck(ctx, uncertain) if uncertain is not None else None  # first: it may have changed the screen
        if uncertain is not None and result is not None:
            journal.append("rechecked", uncertain.step.id, {"verdict": result.verdict, "effect": result.effect, "checks": result.checks})
        if cp and cp.get("screen_facts") and _screen_still_shows_checkpoint(uncertain, result, approval):
            _reprove_checkpoint(ctx, cp)
        if uncertain is not None and result is not None and not _covered(result, decision):
            _refuse_uncertain(ctx, uncertain, result, pending, carried, prev)
        if pending is not None and approval is not None:
            rec = record_decision(journal, pending, approval, carried)  # the point of no return
        if uncertain is not None and result is not None:
            if decision == "reconcile" and approval is not None and approval["effect"] == "landed":
                _checkpoint_step(ctx, uncertain.index, "operator", result.effect)
                start = uncertain.index + 1
            elif decision != "reconcile" and result.verdict == CONFIRMED_DONE:
                _checkpoint_step(ctx, uncertain.index, "reconciled", result.effect)
                start = uncertain.index + 1
            else:  # RETRYABLE, ABSENT with `continue`, or reconciled absent: performed again, once, after resolving
                start = uncertain.index  # afresh and passing the identity gate (its dispatch spends the decision)
        elif decision == "skip" and pending is not None:
            idx = next(i for i, s in enumerate(steps) if s.id == pending["step"])
            record_verified(ctx, pending["step"], {"index": idx, "verified_by": "operator", "operator": approval["operator"] if approval else None},
                            kind="step_skipped")
            start = idx + 1
        if decision == "continue" and pending is not None:
            ctx.approved_before = pending["step"]
        if decision in ("answer", "signal") and pending is not None and approval is not None:
            ctx.inbox[pending["step"]] = approval["payload"]
        if pending is not None:
            if approval is not None:
                consume_decision(run, journal, pending, approval, rec)  # marked used in the run ledger, moved
            run.remove_pending()
        run.write_state("RUNNING", journal=journal, last_checkpoint_seq=(ctx.fold.checkpoint() or {}).get("seq"))
    except Halt as h:
        journal.append("halted", h.step, {"category": h.category, "message": h.message, "input_sent": False})
        if approval is not None and pending is not None:
            consume_decision(run, journal, pending, approval, rec)
        return finish(ctx, "PAUSED", h.message, h.category, "awaiting_approval", h.step)
    return start


def _covered(result: RecheckResult, decision: str | None) -> bool:
    """May resume go on from this re-check, given the decision (if any)?"""
    return decision == "reconcile" or result.verdict in (CONFIRMED_DONE, RETRYABLE) or (
        result.verdict == POSITIVELY_ABSENT and decision == "continue")


def _refuse_uncertain(ctx: RunContext, uncertain: Uncertain, result: RecheckResult, pending: dict[str, Any] | None,
                      carried: dict[str, Any] | None, prev: dict[str, Any]) -> NoReturn:
    """An uncertain step that no decision covers: nothing is sent. An interrupted run opens a pause; a decided one
    keeps its decision unused (an approval stays in approval.json, a journaled decision stays in force)."""
    run, journal = ctx.run, ctx.journal
    msg = f"step {uncertain.step.id!r} was dispatched but is {result.verdict} on re-check; nothing was sent"
    if pending is None:  # an interrupted run: open a pause so an operator can decide
        finish(ctx, "PAUSED", msg, "uncertain", "awaiting_approval", uncertain.step.id)
        raise RefusedError(msg + "; the run now awaits an operator decision (flow approve)")
    journal.close()
    run.restore_state(prev)
    if carried is not None:
        raise RefusedError(msg + f"; the journaled decision {carried['data'].get('decision')!r} (seq {carried['seq']}) "
                           "stays in force — resume again once the re-check is conclusive")
    raise RefusedError(msg + "; an operator must reconcile it (flow approve --decision reconcile --effect landed|absent)")


def _restore_pause(run: RunHandle, journal: JournalWriter, pending: dict[str, Any]) -> None:
    """A run interrupted while pausing (its pause is in the journal, the state never said PAUSED): the state says so
    now, so status, wait and operators see the pause that awaits them."""
    data = {"state": "PAUSED", "paused_reason": pending["paused_reason"], "transaction_outcome": pending.get("transaction_outcome"),
            "restored": True}
    journal.append("paused", None, data)
    run.write_state("PAUSED", journal=journal, paused_reason=pending["paused_reason"], transaction_outcome=pending.get("transaction_outcome"),
                    halt_category=pending.get("category"), message=pending.get("message"))


def _screen_still_shows_checkpoint(uncertain: Uncertain | None, result: RecheckResult | None, approval: dict[str, Any] | None) -> bool:
    """Can the screen still show what held after the checkpoint? Only if no later input landed (SPEC §9, docs/durable.md).

    Nothing dispatched after it: yes. An uncertain later step that will be performed again (its re-check found it
    not done): its input did not take, so yes. A later step that landed (re-check CONFIRMED, or an operator's
    `reconcile --effect landed`) changed the screen: its own re-checked facts stand in for the checkpoint's.
    A re-check that is still unknown (or absent with no decision) refuses anyway, before any input.
    """
    if uncertain is None or result is None:
        return True
    decision = approval["decision"] if approval is not None else None
    if decision == "reconcile":
        return approval is not None and approval.get("effect") != "landed"
    return result.verdict == RETRYABLE or (result.verdict == POSITIVELY_ABSENT and decision == "continue")


def _reprove_checkpoint(ctx: RunContext, cp: dict[str, Any]) -> None:
    checks = check_facts(ctx, cp["screen_facts"])
    ctx.journal.append("checkpoint_reproved", cp["step"], {"ok": all(c["ok"] for c in checks), "checks": checks})
    if not all(c["ok"] for c in checks):
        raise Halt("postcondition", f"the screen no longer shows what held after step {cp['step']!r}: "
                   + "; ".join(f"{c['kind']} {c['expected']!r}" for c in checks if not c["ok"]), step=cp["step"])


def _orphaned(manifest: dict[str, Any]) -> str | None:
    """A child run whose parent run is gone or BLOCKED is suspended, not continued."""
    parent = manifest.get("parent_run")
    if not parent:
        return None
    try:
        run = open_ref(parent)
    except FlowError:
        return f"parent run {parent} is gone"
    try:
        if run.state().get("state") == "BLOCKED":
            return f"parent run {parent} is BLOCKED"
    except FlowError:
        return f"parent run {parent} is unreadable"
    return None


def _still_waiting(run: RunHandle, pending: dict[str, Any] | None) -> str | None:
    """Why a wait pause cannot continue yet (no answer/signal delivered, timer not due), or None."""
    if pending is None:
        return None
    reason = pending["paused_reason"]
    if reason in ("awaiting_user", "awaiting_signal") and not run.has_approval():
        return f"still {reason} at step {pending['step']!r} (flow {'answer' if reason == 'awaiting_user' else 'signal'} {run.ref} …)"
    if reason == "awaiting_child":
        child = run.sibling(pending["step"])
        # as a reader sees it: a child left RUNNING/RESUMING by a process that died is INTERRUPTED, and this run's own
        # resume continues it (runtime/act/child.py); only a paused child or one a live process drives is waited for
        st = effective_state(child).get("state") if child.has_state() else None
        if st in ("PAUSED", "RUNNING", "RESUMING"):
            return f"child run {run_name(child)} is {st}; resume it first"
    if reason == "awaiting_timer" and not run.has_approval():
        due = pending.get("due_epoch") or 0
        if time.time() < due:
            return f"timer of step {pending['step']!r} is due in {due - time.time():.1f}s"
    return None


def _checkpoint_step(ctx: RunContext, index: int, verified_by: str, effect: dict[str, Any] | None) -> None:
    step = ctx.model.steps[index]
    record_verified(ctx, step.id, {"index": index, "verified_by": verified_by, "effect": effect, "screen_facts": screen_facts(ctx, step)})


