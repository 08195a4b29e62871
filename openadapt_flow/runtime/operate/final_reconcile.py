"""`flow approve --decision reconcile` on a run that stopped for good with a write uncertain (spec §8, "Advice").

A non-durable run (FAILED, FAILED_AFTER_EFFECT, INTERRUPTED) has no pause to decide and never resumes, but after a
consequential input its report asks one question only a person can answer — did the write land? — and names this
decision as where the answer goes. The answer is journaled as a `decision` record (the journal stays the record of
truth; outcome.classify reads it), then the run's stop again with the outcome and landed steps it now has, and
state.json re-sealed. Nothing is sent to the desktop, and the run stays stopped.
"""

from __future__ import annotations

from openadapt_flow.bundle.loader import load_bundle
from openadapt_flow.errors import RefusedError
from openadapt_flow.records.entry import JournalEntry
from openadapt_flow.records.kinds import RunStopData
from openadapt_flow.records.pausedoc import DecisionOutcome
from openadapt_flow.records.rundoc import ManifestDoc, StateView
from openadapt_flow.records.states import DecisionKind, RecordType, RunState, TransactionOutcome, is_a
from openadapt_flow.runtime.judge.outcome import classify, landed, settled_pause_id
from openadapt_flow.runtime.operate.truth import journal_decision
from openadapt_flow.runtime.start.lifecycle import record_stop
from openadapt_flow.store.base import RunHandle
from openadapt_flow.store.journal import now_iso
from openadapt_flow.store.keys import load_key

SETTLEABLE = (RunState.FAILED, RunState.FAILED_AFTER_EFFECT, RunState.INTERRUPTED)


def settleable(manifest: ManifestDoc, state: StateView) -> bool:
    """Is `state` one a reconcile settles without a pause: a non-durable run that stopped for good?"""
    return not manifest.get("durable") and state.get("state") in SETTLEABLE


def _last_reconcile(records: list[JournalEntry]) -> JournalEntry | None:
    return next(
        (
            r
            for r in reversed(records)
            if is_a(r, RecordType.DECISION) and (r.get("data") or {}).get("decision") == DecisionKind.RECONCILE
        ),
        None,
    )


def settle_final(
    run: RunHandle,
    records: list[JournalEntry],
    state: StateView,
    *,
    effect: str,
    operator: str,
    os_user: str,
    note: str | None,
    channel: str,
) -> DecisionOutcome:
    """Journal the operator's answer about the run's uncertain write and re-write its stop; the caller holds the
    run's lease (`approval.deciding`). A repeat of the answer that settled it is a no-op; any other is refused."""
    steps = load_bundle(run.artifact_dir("bundle")).model.steps  # the run's own snapshot, not the bundle on disk
    if state.get("state") not in SETTLEABLE:
        raise RefusedError(f"{run.ref}: run is {state.get('state')}, not stopped for good; refusing")
    outcome, evidence = classify(steps, records)
    uncertain = [e for e in evidence if not e["positively_absent"]]
    if not uncertain:
        done = _last_reconcile(records)
        data = (done.get("data") or {}) if done is not None else {}
        if done is not None and data.get("effect") == effect and data.get("os_user") == os_user:
            return {"recorded": False, "noop": True, "decision": DecisionKind.RECONCILE, "state": state.get("state")}
        said = f" (reconciled: --effect {data.get('effect')} by {data.get('operator')})" if done is not None else ""
        raise RefusedError(
            f"{run.ref}: no write of this run is uncertain (transaction_outcome {outcome}){said}; nothing to reconcile"
        )
    target = uncertain[-1]  # a run stops at its first halt: one uncertain step
    journal, _ = run.open_journal(load_key(create=False))
    rec = journal_decision(
        journal,
        target["step"],
        {
            "pause_id": settled_pause_id(target["step"], target["dispatch_seq"]),
            "decision": DecisionKind.RECONCILE,
            "effect": effect,
            "operator": operator,
            "os_user": os_user,
            "note": note,
            "decided_at": now_iso(),
            "channel": channel,
        },
    )
    after = [*records, rec]
    outcome, evidence = classify(steps, after)
    wrote = landed(steps, after)
    final = RunState(str(state.get("state")))
    if final == RunState.FAILED and wrote:
        final = RunState.FAILED_AFTER_EFFECT  # a landed write is never a plain FAILED (docs/decisions.md)
    stop: RunStopData = {"state": final, "transaction_outcome": outcome, "outcome_evidence": evidence}
    if wrote:
        stop["landed"] = wrote
    record_stop(journal, stop)
    journal.close()
    said = "landed" if effect == "landed" else "did not land"
    message = (
        f"{state.get('message') or ''}; reconciled by {operator}: the write of step {target['step']} {said}".lstrip(
            "; "
        )
    )
    run.write_state(
        final,
        journal=journal,
        transaction_outcome=TransactionOutcome(outcome),
        halt_category=state.get("halt_category"),
        message=message,
    )
    return {
        "recorded": True,
        "decision": DecisionKind.RECONCILE,
        "pause_id": str(rec["data"]["pause_id"]),
        "operator": operator,
        "os_user": os_user,
        "state": final,
        "settled": True,
        "transaction_outcome": outcome,
    }
