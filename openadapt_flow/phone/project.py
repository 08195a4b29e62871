"""The projection of a pause onto its closed context (spec §21): what the relay may tell the hosted queue.

Only ids, the bundle's name, the step's id and intent as written in the run's own bundle snapshot (a `{param}`
placeholder stays a placeholder), the category, transaction_outcome, the decisions a phone may take, the expiry and
the decision task's bindings. Never the message, evidence, frames, OCR text or any param value.
"""

from __future__ import annotations

from openadapt_flow.bundle.loader import load_bundle
from openadapt_flow.errors import FlowError
from openadapt_flow.phone.context import PHONE_DECISIONS, PhoneContext
from openadapt_flow.records.pausedoc import PendingBody
from openadapt_flow.store import RunHandle


def intent_as_written(run: RunHandle, step_id: str) -> str:
    """The step's intent from the run's bundle snapshot, unsubstituted; "" for a run without one (a Python workflow)."""
    try:
        model = load_bundle(run.artifact_dir("bundle")).model
    except FlowError:
        return ""
    step = next((s for s in model.steps if s.id == step_id), None)
    return step.intent if step is not None and step.intent else ""


def closed_context(run: RunHandle, pending: PendingBody) -> PhoneContext | None:
    """The closed context of `run`'s open pause, or None when a phone can take no decision on it."""
    task = pending["task"]
    allowed = [d for d in task["allowed_decisions"] if d in PHONE_DECISIONS]
    channels = task.get("channels")
    if not allowed or (channels and "phone" not in channels):  # approvals.channels leaves the phone out: not shown
        return None
    manifest = run.manifest()
    return PhoneContext.model_validate(
        {
            "run_id": task["run_id"],
            "pause_id": pending["pause_id"],
            "bundle": str((manifest.get("bundle") or {}).get("name") or manifest.get("workflow") or "")[:200],
            "step": pending["step"],
            "intent": intent_as_written(run, pending["step"])[:500],
            "category": pending.get("category") or "",
            "transaction_outcome": pending.get("transaction_outcome"),
            "allowed": allowed,
            "expires_at": task["expires_at"],
            "checkpoint_digest": task["checkpoint_digest"],
            "idempotency_scope": task["idempotency_scope"],
        }
    )
