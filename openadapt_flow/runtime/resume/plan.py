"""The resume's plan (spec §8–§10, §14): what `flow resume` will do to a run, decided from what it reads — the
journal, state.json and its seal, checkpoint.json, the pause's views, approval.json, the bundle snapshot — with
nothing written: no journal record, no state, no view repaired, no lock or lease taken.

A plan is the repairs to make first, in order (`acts`: a view that lags the journal brought up to date, an owner's
death recorded, a pause restored or dropped, a journaled reject carried out), then one of: a stop (`stop`: the run
is over, or waits, or was suspended), a refusal (`refusal`: raised once the acts before it are made, as a resume
always did), or what to continue — the pause to resolve, the operator's checked decision (or the journal's
`carried` one), the verified checkpoint. `resume/execute.py` applies it; `flow resume --dry-run` prints it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from openadapt_flow.backends.factory import open_backend
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.config import BackendConfig, DeployConfig
from openadapt_flow.bundle.loader import LoadedBundle
from openadapt_flow.bundle.params import BoundParams, bind_params, secret_env_name
from openadapt_flow.errors import FlowError, RefusedError, UsageError
from openadapt_flow.records.entry import CheckpointDoc, JournalEntry
from openadapt_flow.records.pausedoc import AppliedDecision, PendingBody
from openadapt_flow.records.rundoc import ManifestDoc
from openadapt_flow.records.states import FINAL_STATES, LIVE_STATES, DecisionKind, PausedReason, RunState
from openadapt_flow.runtime.act.durable.waiting import still_waiting
from openadapt_flow.runtime.judge.calls import call_steps
from openadapt_flow.runtime.judge.outcome import RECONCILIATION_REQUIRED
from openadapt_flow.runtime.operate.approval import check_approval
from openadapt_flow.runtime.operate.truth import journaled_decision, lagging_end, read_pause, sealed_state
from openadapt_flow.runtime.operate.upgrade import check_upgrade
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
from openadapt_flow.runtime.resume.snapshot import planned_bundle
from openadapt_flow.runtime.start.backend_select import BackendFlags, merge_backend, select_backend
from openadapt_flow.runtime.start.context import Progress
from openadapt_flow.runtime.start.launch import BackendFactory, Reporter, RunOutcome
from openadapt_flow.runtime.start.lifecycle import check_manifest, finalized_state, queued
from openadapt_flow.runtime.start.preflight import check_settings
from openadapt_flow.runtime.start.runref import RunRef, open_ref, ref_path
from openadapt_flow.runtime.workflow.api import resolve_entry
from openadapt_flow.store.base import RunHandle
from openadapt_flow.store.checkpoint import judge_checkpoint
from openadapt_flow.store.keys import load_decision_key, load_key

__all__ = ["ResumePlan", "ResumeRequest", "backend_spec", "open_request", "plan", "plan_resume"]


@dataclass(frozen=True)
class ResumeRequest:
    """What `flow resume` asks — the backend (a whole spec, or flags and `--config`'s backend section over the recorded
    one), an operator's approval required, params (checked against the run's), a bundle upgrade, the run's original
    bundle (`bundle`: for a snapshot that cannot be read, snapshot.py) — and how the resume is watched (progress,
    reporter, `notice`: one line for the operator), opens its backend and is stopped (a worker's SIGTERM)."""

    backend: BackendSpec | None = None
    require_approval: bool = False
    params: Mapping[str, Any] | None = None
    progress: Progress | None = None
    reporter: Reporter | None = None
    backend_factory: BackendFactory = open_backend
    stop: threading.Event | None = None
    backend_flags: BackendFlags | None = None
    backend_config: BackendConfig | None = None
    upgrade_bundle: Path | None = None
    bundle: Path | None = None
    notice: Callable[[str], None] | None = None
    fence: Callable[[], None] | None = None  # checked before every input besides the lease: a fleet desktop's lock


@dataclass(frozen=True)
class ResumePlan:
    """What a resume does: `acts` first, in order; then `stop` (how the run stays), `refusal` (raised), or it
    continues — the pause it resolves, the decision it applies (checked, or `carried`: journaled by a resume that
    died before it took effect), the verified checkpoint, from the bundle `loaded` (None: a workflow's code, `entry`)."""

    acts: tuple[Act, ...] = ()
    state: RunState | None = None  # the run's state once the acts are made (None: refused before it was known)
    pending: PendingBody | None = None
    approval: AppliedDecision | None = None
    carried: JournalEntry | None = None
    checkpoint: CheckpointDoc | None = None
    stop: RunOutcome | None = None
    refusal: FlowError | None = None
    loaded: LoadedBundle | None = None
    bound: BoundParams | None = None
    entry: Callable[..., Any] | None = field(default=None, repr=False)

    @property
    def decision(self) -> str | None:
        return self.approval["decision"] if self.approval else None

    def describe(self) -> list[str]:
        """The plan in lines, for `flow resume --dry-run`."""
        lines = [f"state: {self.state or 'unknown'}"] + [f"then: {a.describe()}" for a in self.acts]
        if self.refusal is not None:
            return lines + [f"refused: {self.refusal}"]
        if self.stop is not None:
            return lines + [f"stops: {self.stop.state} — {self.stop.message}"]
        if self.pending is not None:
            lines.append(
                f"resolves pause {self.pending['pause_id']} at step {self.pending['step']!r} "
                f"({self.pending['paused_reason']})"
            )
        if self.decision is not None:
            by = f" (journaled at seq {self.carried['seq']}, applied from the journal)" if self.carried else ""
            lines.append(
                f"applies decision {self.decision} by {self.approval['operator'] if self.approval else None}{by}"
            )
        cp = self.checkpoint
        lines.append(
            f"continues after verified step {cp['step']!r} (seq {cp['seq']})"
            if cp
            else "no step verified yet: continues from the first step"
        )
        return lines


class _Planning:
    """The plan as it is made: the acts found so far (kept when a later check refuses)."""

    def __init__(self) -> None:
        self.acts: list[Act] = []
        self.state: RunState | None = None

    def done(self, **kw: Any) -> ResumePlan:
        return ResumePlan(tuple(self.acts), self.state, **kw)


def open_request(ref: RunRef, req: ResumeRequest) -> tuple[RunHandle, ManifestDoc, ResumeRequest]:
    """The run a resume names, its manifest and the request checked against it (bad input before any lease)."""
    run = open_ref(ref)
    if queued(run):  # submitted (spec §19), never started: its start job, not a resume, begins it
        raise RefusedError(
            f"{run.ref}: queued for a fleet worker (submitted, not started yet); nothing to resume; refusing"
        )
    manifest = run.manifest()
    if req.backend_flags or req.backend_config is not None:
        req = replace(req, backend=backend_spec(manifest, req.backend, req.backend_flags, req.backend_config))
    workflow = manifest.get("kind") == "workflow"
    if workflow and req.upgrade_bundle is not None:
        raise UsageError("--upgrade-bundle applies to bundle runs, not to a Python workflow's run")
    if workflow and req.bundle is not None:
        raise UsageError("--bundle applies to bundle runs, not to a Python workflow's run")
    if workflow and req.params:
        raise RefusedError(f"{run.ref}: a workflow run keeps the args it started with; --param is not accepted")
    if not workflow and not manifest.get("durable"):
        raise RefusedError(f"{run.ref}: a non-durable run cannot be resumed (replay with --durable)")
    return run, manifest, req


def plan(ref: RunRef, req: ResumeRequest | None = None) -> ResumePlan:
    """The plan of `flow resume REF` as things stand, writing nothing (`flow resume --dry-run`). The executor makes
    its own under the run's lease, from the same reads."""
    run, _manifest, req = open_request(ref, req or ResumeRequest())
    records = run.load_journal(load_key(create=False)).records  # a torn tail is left in place (the executor cuts it)
    return plan_resume(run, records, req, load_key(create=False), load_decision_key(create=False))


def plan_resume(run: RunHandle, records: list[JournalEntry], req: ResumeRequest, key: bytes, dkey: bytes) -> ResumePlan:
    """The plan, from the run's files as they are (reads only). A refusal found after some acts keeps them: they are
    made first, as a resume always made them before it refused."""
    p = _Planning()
    try:
        return _plan(p, run, run.manifest(), records, req, key, dkey)
    except FlowError as e:
        return p.done(refusal=e)


def _plan(
    p: _Planning,
    run: RunHandle,
    manifest: ManifestDoc,
    records: list[JournalEntry],
    req: ResumeRequest,
    key: bytes,
    dkey: bytes,
) -> ResumePlan:
    workflow = manifest.get("kind") == "workflow"
    check_manifest(run, records)  # params (args), backend and config are pinned by the journal's first record
    loaded: LoadedBundle | None = None
    if (
        not workflow
    ):  # its snapshot (and layers); an unreadable snapshot: the run's original bundle (--bundle) stands in
        loaded, rewrite = planned_bundle(run, manifest["bundle"]["digest"], records, req.bundle, req.upgrade_bundle)
        if rewrite is not None:
            p.acts.append(RewriteSnapshot(rewrite))
    p.state = _state(p, run, records, key, loaded)
    if p.state in FINAL_STATES:
        return p.done(stop=_stop(run, p.state, _already_over(run, p.state)))
    entry = _entry(run, manifest) if workflow else None
    bound = None
    if loaded is not None:
        orphan = _orphaned(manifest)
        if orphan:
            p.acts.append(Suspend(orphan))
            return p.done(stop=_stop(run, RunState.PAUSED, orphan))
        if req.upgrade_bundle is not None and (
            up := check_upgrade(records, loaded, manifest["params"], req.upgrade_bundle)
        ):
            p.acts.append(AdoptUpgrade(up, loaded))
            loaded = up.new
        bound = _params(loaded, manifest, req.params or {})
        check_settings(
            loaded, DeployConfig.model_validate(manifest["config"]), bound, bool(manifest.get("allow_model"))
        )
    return _pause_plan(p, run, records, req, dkey, loaded, bound, entry)


def _state(
    p: _Planning, run: RunHandle, records: list[JournalEntry], key: bytes, loaded: LoadedBundle | None
) -> RunState:
    """The run's state once its views are caught up from the journal; a run whose owner died is finalised INTERRUPTED."""
    state = sealed_state(run, records, key)
    p.acts.append(ClaimLedger())
    now = state.get("state")
    end = lagging_end(records, state)
    if end is not None:
        p.acts.append(CatchUpState(end))
        now = end["data"]["state"]
    if now in LIVE_STATES:
        steps = call_steps(records) if loaded is None else loaded.model.steps
        p.acts.append(FinalizeInterrupted(str(now), tuple(steps)))
        now = finalized_state(records)
    try:
        return RunState(now)
    except ValueError:  # sealed by this installation, yet no state this tool knows: never acted on
        raise RefusedError(f"{run.describe('state')}: state {now!r} is not a run state; refusing") from None


def _pause_plan(
    p: _Planning,
    run: RunHandle,
    records: list[JournalEntry],
    req: ResumeRequest,
    dkey: bytes,
    loaded: LoadedBundle | None,
    bound: BoundParams | None,
    entry: Callable[..., Any] | None,
) -> ResumePlan:
    """The open pause (the journal's; the file must agree with it) turned into what to continue. A workflow's plan never
    carries a decision: its calls find theirs in the journal as they run again."""
    workflow = loaded is None
    on = {"loaded": loaded, "bound": bound, "entry": entry}
    cp, status = judge_checkpoint(run.read_checkpoint(), records, run.describe("checkpoint"))
    if status == "rebuilt" and cp is not None:
        p.acts.append(RebuildCheckpoint(cp))
    pending, repairs = read_pause(run, records, dkey)
    if repairs:
        p.acts.append(RepairViews(repairs))
    pending = _interrupted_pause(p, run, pending, workflow)
    carried = None if workflow or pending is not None else journaled_decision(records)
    if carried is not None:  # decided, then killed before it took effect: applied from the journal, never asked again
        rec, decided, journaled = carried
        if (
            journaled["decision"] == DecisionKind.REJECT
        ):  # killed between the reject's record and the run's end: end it now
            p.acts.append(BlockRun(decided, journaled, rec))
            return p.done(
                pending=decided,
                approval=journaled,
                carried=rec,
                checkpoint=cp,
                stop=_stop(run, RunState.BLOCKED, f"rejected by {journaled['operator']}"),
                **on,
            )
        return p.done(pending=decided, approval=journaled, carried=rec, checkpoint=cp, **on)
    has_approval = run.has_approval() and repairs.retire_approval is None  # a used one is moved away first
    waiting = None if req.require_approval else still_waiting(run, pending, approved=has_approval)
    if waiting is not None:
        return p.done(
            pending=pending,
            checkpoint=cp,
            stop=_stop(run, RunState.PAUSED, waiting, pending["category"] if pending else None),
            **on,
        )
    needs_decision = pending is not None and (
        pending["paused_reason"] == PausedReason.AWAITING_APPROVAL or has_approval
    )
    if not (needs_decision or req.require_approval):
        return p.done(pending=pending, checkpoint=cp, **on)
    if pending is None:
        raise RefusedError(f"{run.ref}: --require-approval, but nothing is pending for an operator to approve")
    approval = check_approval(run, pending, dkey, checkpoint=cp)
    if (
        workflow
        and approval["decision"] == DecisionKind.CONTINUE
        and pending.get("transaction_outcome") == RECONCILIATION_REQUIRED
    ):
        raise RefusedError(
            f"{run.ref}: call {pending['step']!r} is uncertain; continue would re-run it blindly — "
            "an operator must reconcile it (flow approve --decision reconcile --effect landed|absent)"
        )
    return p.done(pending=pending, approval=approval, checkpoint=cp, **on)


def _interrupted_pause(p: _Planning, run: RunHandle, pending: PendingBody | None, workflow: bool) -> PendingBody | None:
    """A run killed while pausing (its pause journaled, the state never said PAUSED). A bundle's pause is restored: the
    state says PAUSED then, so status, wait and operators see the pause that awaits them. A workflow's is dropped unless
    an operator decided it already: running its code again re-derives the pause."""
    if pending is None:
        return None
    if not workflow:
        if p.state == RunState.INTERRUPTED:
            p.acts.append(RestorePause(pending))
        return pending
    if p.state == RunState.PAUSED or _decided(run, pending):
        return pending
    assert p.state is not None
    p.acts.append(DropEscalation(pending, p.state))
    return None


def _decided(run: RunHandle, pending: PendingBody) -> bool:
    """Did an operator decide this pause (a resume that was using the decision died before journaling it)?"""
    try:
        approval = run.read_approval()
    except RefusedError:
        return True  # unreadable: check_approval names what is wrong with it
    return approval is not None and approval.get("pause_id") == pending["pause_id"]


def _stop(run: RunHandle, state: RunState, message: str, category: str | None = None) -> RunOutcome:
    return RunOutcome(state, RunState(state).exit_code, ref_path(run), message, category)


def _entry(run: RunHandle, manifest: ManifestDoc) -> Callable[..., Any]:
    try:
        return resolve_entry(manifest["entry"])
    except UsageError as e:
        raise RefusedError(f"{run.ref}: cannot load the run's workflow: {e}") from None


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


def _orphaned(manifest: ManifestDoc) -> str | None:
    """A child run whose parent run is gone or BLOCKED is suspended, not continued."""
    parent = manifest.get("parent_run")
    if not parent:
        return None
    try:
        run = open_ref(parent)
    except FlowError:
        return f"parent run {parent} is gone"
    try:
        if run.state().get("state") == RunState.BLOCKED:
            return f"parent run {parent} is BLOCKED"
    except FlowError:
        return f"parent run {parent} is unreadable"
    return None


def _params(loaded: LoadedBundle, manifest: ManifestDoc, given: Mapping[str, Any]) -> BoundParams:
    recorded = {k: v for k, v in manifest["params"].items() if not (isinstance(v, dict) and "secret_env" in v)}
    params = bind_params(loaded.model, recorded)
    for k, v in given.items():
        if k not in params.values or str(params.values[k]) != str(
            bind_params(loaded.model, {**recorded, k: v}).values[k]
        ):
            raise RefusedError(f"--param {k}={v!r} differs from the run's bound value; a run keeps its params")
    for name, spec in loaded.model.params.items():
        if spec.secret and spec.required and name not in params.secrets:
            raise RefusedError(f"secret param {name!r} must be in the environment ({secret_env_name(name)}) to resume")
    return params


def backend_spec(
    manifest: ManifestDoc,
    override: BackendSpec | None,
    flags: BackendFlags | None = None,
    config: BackendConfig | None = None,
) -> BackendSpec | None:
    """The backend resume drives: a whole `override` spec; else the flags merged field by field onto `config`'s
    backend section (`--config`) when it names one, or onto the run's recorded backend (its manifest)."""
    if override is not None:
        return override
    flags = flags or BackendFlags()
    if config is not None and (config.kind or config.url):
        return select_backend(config, backend=flags.backend, url=flags.url, rdp_host=flags.rdp_host)
    recorded = BackendSpec.from_json(spec) if (spec := manifest.get("backend")) else None
    return merge_backend(recorded, flags) if flags else recorded
