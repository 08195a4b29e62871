"""`flow resume`: continue a paused or interrupted durable run from its last verified checkpoint (spec §8–§10).

One resume path for every kind of run: it opens the run (lease, journal, views caught up, a dead owner's run
finalised), turns its open pause into a plan (plan.py: the pause to resolve, the decision, the verified checkpoint to
continue from, or why it must go on waiting), journals `run_resumed` there alone, then continues a bundle's steps
(bundle.py) or a Python workflow's code (workflow.py). Never re-performs a checkpointed step; never blind-retries an
uncertain one.
"""

from __future__ import annotations

from dataclasses import replace

from openadapt_flow.errors import FlowError, RefusedError, UsageError
from openadapt_flow.runtime.start.launch import RunOutcome, Runs
from openadapt_flow.runtime.start.lifecycle import check_manifest, finalize_interrupted, queued
from openadapt_flow.runtime.start.runref import RunRef, open_ref, ref_path
from openadapt_flow.runtime.judge.calls import call_steps
from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.bundle.loader import LoadedBundle
from openadapt_flow.runtime.operate.truth import catch_up_state, check_views
from openadapt_flow.runtime.resume.bundle import backend_spec, continue_bundle
from openadapt_flow.runtime.resume.plan import Opened, ResumePlan, ResumeRequest, plan_resume, resumed
from openadapt_flow.runtime.resume.snapshot import resume_bundle
from openadapt_flow.runtime.resume.workflow import continue_workflow
from openadapt_flow.store.base import JournalWriter, RunHandle
from openadapt_flow.records.entry import JournalEntry
from openadapt_flow.store.keys import load_decision_key, load_key
from openadapt_flow.records.states import FINAL_STATES, LIVE_STATES, DecisionKind, RunState
from openadapt_flow.records.rundoc import ManifestDoc

__all__ = ["Opened", "ResumePlan", "ResumeRequest", "plan_resume", "resume", "resumed"]


def resume(ref: RunRef, runs: Runs, req: ResumeRequest | None = None) -> RunOutcome:
    """Continue a paused or interrupted durable run of either kind, a bundle's or a Python workflow's (spec §14: its
    code runs again on its journal); `req.stop` (e.g. a worker's) is set by SIGTERM/SIGINT."""
    req = req or ResumeRequest()
    run = open_ref(ref)
    if queued(run):  # submitted (spec §19), never started: its start job, not a resume, begins it
        raise RefusedError(f"{run.ref}: queued for a fleet worker (submitted, not started yet); nothing to resume; refusing")
    manifest = run.manifest()
    if req.backend_flags or req.backend_config is not None:
        req = replace(req, backend=backend_spec(manifest, req.backend, req.backend_flags, req.backend_config))
    workflow = manifest.get("kind") == "workflow"
    _check_request(run, manifest, req, workflow)
    config = DeployConfig.model_validate(manifest["config"])
    lease = run.lease(config.runtime.lease_ttl_s).acquire()
    lease.start_heartbeat()  # a resume owns the run as long as a start does: its lease must not lapse under it
    journal: JournalWriter | None = None
    try:
        journal, records = run.open_journal(load_key(create=False))
        check_manifest(run, records)  # params (args), backend and config are pinned by the journal's first record
        # a bundle run's snapshot (and layers); an unreadable snapshot: the run's original bundle (--bundle) stands in
        loaded = None if workflow else resume_bundle(run, manifest["bundle"]["digest"], records, req.bundle,
                                                     req.upgrade_bundle, req.notice)
        o = Opened(run, manifest, config, lease, journal, records, _caught_up(run, journal, records, loaded),
                   load_decision_key(create=False), runs, req, loaded)
        if o.state in FINAL_STATES:
            return RunOutcome(o.state, o.state.exit_code, ref_path(run), _already_over(run, o.state))
        return continue_workflow(o) if workflow else continue_bundle(o)
    finally:
        if journal is not None:
            journal.close()
        lease.release()


def _check_request(run: RunHandle, manifest: ManifestDoc, req: ResumeRequest, workflow: bool) -> None:
    if workflow and req.upgrade_bundle is not None:
        raise UsageError("--upgrade-bundle applies to bundle runs, not to a Python workflow's run")
    if workflow and req.bundle is not None:
        raise UsageError("--bundle applies to bundle runs, not to a Python workflow's run")
    if workflow and req.params:
        raise RefusedError(f"{run.ref}: a workflow run keeps the args it started with; --param is not accepted")
    if not workflow and not manifest.get("durable"):
        raise RefusedError(f"{run.ref}: a non-durable run cannot be resumed (replay with --durable)")


def _caught_up(run: RunHandle, journal: JournalWriter, records: list[JournalEntry], loaded: LoadedBundle | None
               ) -> RunState:
    """The run's state with its views caught up from the journal; a run whose owner died is finalised INTERRUPTED."""
    state = catch_up_state(run, records, journal, check_views(run, records, journal.key))
    if state["state"] in LIVE_STATES:
        steps = call_steps(records) if loaded is None else loaded.model.steps
        finalize_interrupted(run, journal, records, steps, "owner process died; found by resume")
        state = run.state()
    try:
        return RunState(state["state"])
    except ValueError:  # sealed by this installation, yet no state this tool knows: never acted on
        raise RefusedError(f"{run.describe('state')}: state {state['state']!r} is not a run state; refusing") from None


def _already_over(run: RunHandle, state: RunState) -> str:
    """Why a run resume finds terminal has nothing to do, naming who ended it where a person did (a reject)."""
    why = ""
    if state == RunState.BLOCKED:
        try:
            inc = run.read_incident()
        except FlowError:
            inc = None
        if inc and inc.get("decision") == DecisionKind.REJECT:
            note = f", noting: {inc['note']}" if inc.get("note") else ""
            why = f": rejected by {inc.get('operator')} (OS user {inc.get('os_user')}) at {inc.get('decided_at')}{note}"
        elif inc:
            why = f": {inc.get('rule')}"
    return f"run is already terminal ({state}{why}); nothing to do"
