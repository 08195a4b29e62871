"""A workflow run's decision on resume (spec §8, §14): how the plan's decision (runtime/resume/plan.py) is journaled and
how an answer or signal becomes its waiting call's recorded result.

A journaled `decision` is the point of no return. It carries what was delivered (the answer, the signal's data), so a
resume that died after journaling it applies it from the journal — never asks again, never applies it twice. A pause
an operator decided is not dropped by a resume that died before using the decision: the next resume uses it.
"""

from __future__ import annotations

from collections.abc import Mapping

from openadapt_flow.records.entry import JournalEntry, step_of
from openadapt_flow.records.pausedoc import AppliedDecision, PendingBody
from openadapt_flow.records.states import DecisionKind, RecordType, is_a
from openadapt_flow.runtime.act.durable import record_verified
from openadapt_flow.runtime.judge.calls import history
from openadapt_flow.runtime.operate.truth import consume_decision, record_decision
from openadapt_flow.runtime.start.context import RunContext


def apply_decision(
    rc: RunContext, records: list[JournalEntry], pending: PendingBody | None, approval: AppliedDecision | None
) -> list[JournalEntry]:
    """Journal the operator's decision; an answer or signal becomes the waiting call's recorded result."""
    if pending is None:
        return []
    new: list[JournalEntry] = []
    if approval is not None:
        # the journal carries the whole decision, what was delivered included (its payload): the point of no return
        decision = record_decision(rc.journal, pending, approval)
        new += [decision] + _record_delivery(rc, records, decision)
        consume_decision(rc.run, rc.journal, pending, approval)  # journaled above, marked used in the run ledger, moved
    rc.run.remove_pending()
    return new


def _payload_value(approval: Mapping[str, object]) -> object:
    payload = approval.get("payload")
    if not isinstance(payload, Mapping):
        return None
    return payload.get("value") if approval.get("decision") == DecisionKind.ANSWER else payload.get("data")


def _delivered(rc: RunContext, d: Mapping[str, object]) -> object:
    """What a journaled answer or signal delivered: its payload (a journal of earlier code: its `value`, else the
    decision file)."""
    if "value" in d:
        return d["value"]
    if d.get("payload") is not None:
        return _payload_value(d)
    return _payload_value(rc.run.read_decision(str(d["pause_id"])) or {})


def _record_delivery(rc: RunContext, records: list[JournalEntry], decision: JournalEntry) -> list[JournalEntry]:
    """A journaled answer or signal becomes its waiting call's recorded result (once: not if it already is)."""
    d, step = decision["data"], step_of(decision)
    header = next((r for r in records if is_a(r, RecordType.STEP_STARTED) and r["step"] == step), None)
    done = any(is_a(r, RecordType.STEP_VERIFIED) and r["step"] == step for r in records)
    if d.get("decision") not in (DecisionKind.ANSWER, DecisionKind.SIGNAL) or header is None or done:
        return []
    value = _delivered(rc, d)
    return [
        record_verified(
            rc,
            step,
            {
                "index": header["data"]["index"],
                "verified_by": "operator",
                "result": value,
                "operator": d.get("operator"),
                "screen_facts": [],
            },
        )
    ]


def journaled_deliveries(rc: RunContext, records: list[JournalEntry]) -> list[JournalEntry]:
    """Answers and signals a resume journaled, then died before recording as their calls' results: applied from the
    journal now, and marked used in the run ledger (their approval files were retired by pending_view)."""
    new: list[JournalEntry] = []
    for call in history(records).values():
        d = call.last("decision")
        if (
            call.verified is not None
            or d is None
            or d["data"].get("decision") not in (DecisionKind.ANSWER, DecisionKind.SIGNAL)
        ):
            continue
        new += _record_delivery(rc, records + new, d)
        rc.run.ledger_consume(d["data"]["pause_id"], d["data"]["decision"], d["seq"], d["hash"])
    return new
