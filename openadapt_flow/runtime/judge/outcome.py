"""transaction_outcome (spec §8), classified from the journal alone — never from the checkpoint."""

from __future__ import annotations

from collections.abc import Iterable

from openadapt_flow.bundle.models import Step
from openadapt_flow.records.entry import JournalEntry
from openadapt_flow.records.pausedoc import OutcomeEvidence
from openadapt_flow.records.states import DecisionKind, RecordType, TransactionOutcome, is_a

HALTED_BEFORE_EFFECT = TransactionOutcome.HALTED_BEFORE_EFFECT
RECONCILIATION_REQUIRED = TransactionOutcome.RECONCILIATION_REQUIRED
RECONCILED_ABSENT = "RECONCILED_ABSENT"  # an operator's reconcile --effect absent: absence established by a person
SETTLED = "reconcile-"  # the pause id prefix of a reconcile of a run that stopped for good (no pause to decide)


def classify(
    steps: Iterable[Step], records: Iterable[JournalEntry]
) -> tuple[TransactionOutcome, list[OutcomeEvidence]]:
    """The outcome and its evidence: one entry per consequential step that was dispatched but not verified."""
    consequential = {s.id for s in steps if s.is_consequential}
    dispatched: dict[str, int] = {}
    verified: set[str] = set()
    last_verdict: dict[str, str | None] = {}  # each step's last effect verdict since its last dispatch
    for r in records:
        step, typ = r.get("step"), r.get("type")
        if step not in consequential:
            continue
        if typ == RecordType.ACTION_DISPATCHED:
            dispatched[step] = r["seq"]
            verified.discard(step)
            last_verdict.pop(step, None)
        elif typ == RecordType.STEP_VERIFIED:
            verified.add(step)
        elif typ == RecordType.EFFECT_VERIFIED:
            verdict = r.get("data", {}).get("verdict")
            last_verdict[step] = verdict if isinstance(verdict, str) else None
        elif (said := _reconciled(r)) is not None:  # an operator's answer settles what no reading could
            if said == "landed":
                verified.add(step)
            else:
                last_verdict[step] = RECONCILED_ABSENT
    evidence: list[OutcomeEvidence] = []
    outcome = HALTED_BEFORE_EFFECT
    for step, seq in dispatched.items():
        if step in verified:
            continue
        verdict = last_verdict.get(step)
        absent = verdict in ("ABSENT", RECONCILED_ABSENT)
        evidence.append(
            {
                "step": step,
                "dispatch_seq": seq,
                "effect_verdict": verdict or "NOT_VERIFIED",
                "positively_absent": absent,
            }
        )
        if not absent:
            outcome = RECONCILIATION_REQUIRED
    return outcome, evidence


def landed(steps: Iterable[Step], records: Iterable[JournalEntry]) -> list[str]:
    """The consequential steps whose write is known to have landed, in the order they landed: the step was verified,
    or its effect was read CONFIRMED (its postconditions may still have failed after). A run that stops short of
    COMPLETED with one of these must never be re-run from the start: that would write again."""
    consequential = {s.id for s in steps if s.is_consequential}
    out: dict[str, None] = {}
    for r in records:
        step, typ = r.get("step"), r.get("type")
        if step not in consequential:
            continue
        if typ == RecordType.ACTION_DISPATCHED:
            out.pop(step, None)  # dispatched again (performed again once known absent): judged afresh
        elif typ == RecordType.STEP_VERIFIED or (
            typ == RecordType.EFFECT_VERIFIED and (r.get("data") or {}).get("verdict") == "CONFIRMED"
        ):
            out[step] = None
        elif (said := _reconciled(r)) is not None:
            if said == "landed":
                out[step] = None
            else:
                out.pop(step, None)
    return list(out)


def settled_pause_id(step: str, dispatch_seq: int) -> str:
    """The pause id a reconcile of a run that stopped for good is journaled under (operate/final_reconcile.py)."""
    return f"{SETTLED}{step}-{dispatch_seq}"


def _reconciled(r: JournalEntry) -> str | None:
    """What an operator's reconcile of a stopped run says of its step's write (landed | absent), else None. A paused
    run's reconcile is not read here: its resume applies it (a checkpoint, or the step performed again)."""
    data = r.get("data") or {}
    if (
        not is_a(r, RecordType.DECISION)
        or data.get("decision") != DecisionKind.RECONCILE
        or not str(data.get("pause_id") or "").startswith(SETTLED)
    ):
        return None
    effect = data.get("effect")
    return effect if effect in ("landed", "absent") else None
