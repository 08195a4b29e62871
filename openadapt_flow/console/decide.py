"""A decision posted from the console, checked against the open pause and recorded as `flow approve` records it."""

from __future__ import annotations

import json
from typing import Any

from openadapt_flow.errors import RefusedError, UsageError
from openadapt_flow.report.render import write_reports
from openadapt_flow.runtime.operate.decisions import DECISION_NAMES, approve, deliver
from openadapt_flow.store.base import RunHandle, RunStore


def _point(form: dict[str, Any]) -> tuple[int, int]:
    try:
        return round(float(form["x"])), round(float(form["y"]))
    except (KeyError, TypeError, ValueError):
        raise UsageError("teach needs the point clicked on the halt frame") from None


def decide_from_form(store: RunStore, run: RunHandle, operator: str, form: dict[str, Any]) -> str:
    """Record the decision in `form` for `run`'s open pause; a one-line summary. The form names the pause it was
    shown: a pause decided, resumed or re-issued since (a replayed or stale form, another run's pause) is refused."""
    pending = run.read_pending() if run.has_pending() else None
    pause_id = str(form.get("pause_id") or "")
    if pending is None or pending.get("pause_id") != pause_id:
        raise RefusedError(f"{run.ref}: pause {pause_id or '?'} is not open on this run (decided, resumed, re-issued or "
                           f"another run's); nothing recorded")
    decision = str(form.get("decision") or "")
    note = str(form.get("note") or "") or None
    audit = store.operators().audit
    if decision in ("answer", "signal"):
        data = None
        if decision == "signal" and form.get("data"):
            try:
                data = json.loads(str(form["data"]))
            except ValueError:
                raise UsageError("signal data must be JSON") from None
        out = deliver(run, decision, operator, value=str(form.get("value") or ""), name=str(form.get("signal") or ""),
                      data=data, channel="console", audit=audit)
    elif decision in DECISION_NAMES:
        point = _point(form) if decision == "teach" else None
        effect = str(form["effect"]) if decision == "reconcile" and form.get("effect") else None
        out = approve(run, decision, operator, note=note, effect=effect, reporter=write_reports, point=point,
                      channel="console", audit=audit)
    else:
        raise UsageError(f"unknown decision {decision!r}")
    if out.get("noop"):
        return f"already recorded: {decision}"
    votes = f" ({out['votes']} of {out['quorum']})" if "votes" in out and out.get("quorum", 1) > 1 else ""
    return f"recorded: {decision} by {operator}{votes}"
