"""A workflow run's pause and its decision on resume (SPEC §8, §14): which pause to resolve and with what approval, and
how an answer or signal becomes its waiting call's recorded result.

A journaled `decision` is the point of no return. It carries what was delivered (the answer, the signal's data), so a
resume that died after journaling it applies it from the journal — never asks again, never applies it twice. A pause
an operator decided is not dropped by a resume that died before using the decision: the next resume uses it.
"""

from __future__ import annotations

from typing import Any

from openadapt_flow.errors import RefusedError
from openadapt_flow.runtime.decide.calls import history
from openadapt_flow.runtime.act.context import RunContext
from openadapt_flow.runtime.operate.decisions import check_approval
from openadapt_flow.runtime.act.durable import record_verified
from openadapt_flow.runtime.act.durable.waiting import still_waiting
from openadapt_flow.runtime.decide.outcome import RECONCILIATION_REQUIRED
from openadapt_flow.runtime.operate.truth import consume_decision, pending_view, record_decision
from openadapt_flow.store.base import JournalWriter, RunHandle


def decision_for(run: RunHandle, journal: JournalWriter, records: list[dict[str, Any]], state: str, dkey: bytes, require_approval: bool
                 ) -> tuple[dict[str, Any] | None, dict[str, Any] | None, str | None]:
    """The pause to resolve and its checked approval, or why the run must go on waiting. RefusedError if not allowed."""
    pending = pending_view(run, records, dkey)  # the journal's open pause; the file must agree with it
    if pending is not None and state != "PAUSED" and not _delivered_for(run, pending):
        # the process died while pausing, before any decision could reach it: running again re-derives the pause
        journal.append("escalation_dropped", pending["step"], {"pause_id": pending["pause_id"], "why": f"run was {state}"})
        run.remove_pending()
        pending = None
    waiting = None if require_approval else still_waiting(run, pending)
    if waiting is not None:
        return pending, None, waiting
    if not (require_approval or (pending is not None and (run.has_approval() or pending["paused_reason"] == "awaiting_approval"))):
        return pending, None, None
    if pending is None:
        raise RefusedError(f"{run.ref}: --require-approval, but nothing is pending for an operator to approve")
    approval = check_approval(run, pending, dkey)
    if approval["decision"] == "continue" and pending.get("transaction_outcome") == RECONCILIATION_REQUIRED:
        raise RefusedError(f"{run.ref}: call {pending['step']!r} is uncertain; continue would re-run it blindly — "
                           "an operator must reconcile it (flow approve --decision reconcile --effect landed|absent)")
    return pending, approval, None


def _delivered_for(run: RunHandle, pending: dict[str, Any]) -> bool:
    """Did an operator decide this pause (a resume that was using the decision died before journaling it)?"""
    try:
        approval = run.read_approval()
    except RefusedError:
        return True  # unreadable: check_approval names what is wrong with it
    return approval is not None and approval.get("pause_id") == pending["pause_id"]


def apply_decision(rc: RunContext, records: list[dict[str, Any]], pending: dict[str, Any] | None, approval: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Journal the operator's decision; an answer or signal becomes the waiting call's recorded result."""
    if pending is None:
        return []
    new: list[dict[str, Any]] = []
    if approval is not None:
        # the journal carries the whole decision, what was delivered included (its payload): the point of no return
        decision = record_decision(rc.journal, pending, approval)
        new += [decision] + _record_delivery(rc, records, decision)
        consume_decision(rc.run, rc.journal, pending, approval)  # journaled above, marked used in the run ledger, moved
    rc.run.remove_pending()
    return new


def _payload_value(approval: dict[str, Any]) -> Any:
    payload = approval.get("payload") or {}
    return payload.get("value") if approval.get("decision") == "answer" else payload.get("data")


def _delivered(rc: RunContext, d: dict[str, Any]) -> Any:
    """What a journaled answer or signal delivered: its payload (a journal of earlier code: its `value`, else the
    decision file)."""
    if "value" in d:
        return d["value"]
    if d.get("payload") is not None:
        return _payload_value(d)
    return _payload_value(rc.run.read_decision(d["pause_id"]) or {})


def _record_delivery(rc: RunContext, records: list[dict[str, Any]], decision: dict[str, Any]) -> list[dict[str, Any]]:
    """A journaled answer or signal becomes its waiting call's recorded result (once: not if it already is)."""
    d, step = decision["data"], decision["step"]
    header = next((r for r in records if r["type"] == "step_started" and r["step"] == step), None)
    done = any(r["type"] == "step_verified" and r["step"] == step for r in records)
    if d.get("decision") not in ("answer", "signal") or header is None or done:
        return []
    value = _delivered(rc, d)
    return [record_verified(rc, step, {"index": header["data"]["index"], "verified_by": "operator", "result": value,
                                       "operator": d.get("operator"), "screen_facts": []})]


def journaled_deliveries(rc: RunContext, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Answers and signals a resume journaled, then died before recording as their calls' results: applied from the
    journal now, and marked used in the run ledger (their approval files were retired by pending_view)."""
    new: list[dict[str, Any]] = []
    for call in history(records).values():
        d = call.last("decision")
        if call.verified is not None or d is None or d["data"].get("decision") not in ("answer", "signal"):
            continue
        new += _record_delivery(rc, records + new, d)
        rc.run.ledger_consume(d["data"]["pause_id"], d["data"]["decision"], d["seq"], d["hash"])
    return new
