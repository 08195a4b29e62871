"""The resume's one executor (spec §8–§10, §14): it takes the run's lease, opens its journal, has the run planned
(plan.py: reads only) from what it holds, then makes every write the plan names, in its order — the view repairs,
an owner's death recorded, a pause restored or dropped, a journaled reject carried out — and raises the plan's
refusal, returns its stop, or continues the run: a bundle's steps (bundle.py) or a Python workflow's code
(workflow.py), which journal `run_resumed` and go on. Never re-performs a checkpointed step; never blind-retries an
uncertain one.
"""

from __future__ import annotations

from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.records.kinds import RunStopData
from openadapt_flow.records.pausedoc import PendingBody
from openadapt_flow.records.states import RecordType, RunState
from openadapt_flow.runtime.operate.reissue import block_run
from openadapt_flow.runtime.operate.truth import catch_up_state, repair_views
from openadapt_flow.runtime.operate.upgrade import adopt_upgrade
from openadapt_flow.runtime.resume.acts import (
    Act,
    AdoptUpgrade,
    BlockRun,
    CatchUpState,
    ClaimLedger,
    DropEscalation,
    FinalizeInterrupted,
    RebuildCheckpoint,
    RepairViews,
    RestorePause,
    RewriteSnapshot,
    Suspend,
)
from openadapt_flow.runtime.resume.bundle import continue_bundle, suspend
from openadapt_flow.runtime.resume.opened import Opened
from openadapt_flow.runtime.resume.plan import ResumePlan, ResumeRequest, open_request, plan_resume
from openadapt_flow.runtime.resume.snapshot import rewrite_snapshot
from openadapt_flow.runtime.resume.workflow import continue_workflow
from openadapt_flow.runtime.start.launch import RunOutcome, Runs
from openadapt_flow.runtime.start.lifecycle import finalize_interrupted, record_stop
from openadapt_flow.runtime.start.runref import RunRef
from openadapt_flow.store.base import JournalWriter, RunHandle
from openadapt_flow.store.keys import load_decision_key, load_key

__all__ = ["apply", "resume"]


def resume(ref: RunRef, runs: Runs, req: ResumeRequest | None = None) -> RunOutcome:
    """Continue a paused or interrupted durable run of either kind, a bundle's or a Python workflow's (spec §14: its
    code runs again on its journal); `req.stop` (e.g. a worker's) is set by SIGTERM/SIGINT."""
    run, manifest, req = open_request(ref, req or ResumeRequest())
    config = DeployConfig.model_validate(manifest["config"])
    lease = run.lease(config.runtime.lease_ttl_s).acquire()
    lease.start_heartbeat()  # a resume owns the run as long as a start does: its lease must not lapse under it
    journal: JournalWriter | None = None
    try:
        journal, records = run.open_journal(load_key(create=False))  # a torn last line is cut: the first write
        dkey = load_decision_key(create=False)
        plan = plan_resume(run, records, req, journal.key, dkey)  # under the lease: what it read stays true
        o = Opened(run, manifest, config, lease, journal, records, dkey, runs, req, plan.loaded)
        apply(o, plan)
        if plan.refusal is not None:
            raise plan.refusal
        if plan.stop is not None:
            return plan.stop
        return continue_bundle(o, plan) if o.loaded is not None else continue_workflow(o, plan)
    finally:
        if journal is not None:
            journal.close()
        lease.release()


def apply(o: Opened, plan: ResumePlan) -> None:
    """Make the plan's acts, in order: every write a resume makes before it continues the run."""
    for act in plan.acts:
        _make(o, act)


def _make(o: Opened, act: Act) -> None:
    run, journal = o.run, o.journal
    if isinstance(act, RewriteSnapshot):
        o.loaded = rewrite_snapshot(run, o.manifest["bundle"]["digest"], o.records, act.rewrite, o.req.notice)
    elif isinstance(act, ClaimLedger):
        run.ledger_claim(o.records)
    elif isinstance(act, CatchUpState):
        catch_up_state(run, journal, act.end)
    elif isinstance(act, FinalizeInterrupted):
        finalize_interrupted(run, journal, o.records, act.steps, act.why)
    elif isinstance(act, Suspend):
        suspend(o, act.reason)
    elif isinstance(act, AdoptUpgrade):
        assert o.loaded is not None
        o.loaded = adopt_upgrade(run, journal, o.records, o.loaded, act.upgrade)
    elif isinstance(act, RebuildCheckpoint):
        run.write_checkpoint(act.checkpoint)
    elif isinstance(act, RepairViews):
        repair_views(run, act.repairs)
    elif isinstance(act, RestorePause):
        _restore_pause(run, journal, act.pending)
    elif isinstance(act, DropEscalation):
        journal.append(
            RecordType.ESCALATION_DROPPED,
            act.pending["step"],
            {"pause_id": act.pending["pause_id"], "why": f"run was {act.was}"},
        )
        run.remove_pending()
    elif isinstance(act, BlockRun):
        block_run(run, journal, act.pending, act.decision, act.rec)


def _restore_pause(run: RunHandle, journal: JournalWriter, pending: PendingBody) -> None:
    data: RunStopData = {
        "state": RunState.PAUSED,
        "paused_reason": pending["paused_reason"],
        "transaction_outcome": pending.get("transaction_outcome"),
        "restored": True,
    }
    record_stop(journal, data)
    run.write_state(
        RunState.PAUSED,
        journal=journal,
        paused_reason=pending["paused_reason"],
        transaction_outcome=pending.get("transaction_outcome"),
        halt_category=pending.get("category"),
        message=pending.get("message"),
    )
