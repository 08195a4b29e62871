"""A decision posted from the console, checked against the open pause and recorded as `flow approve` records it.

The run's reports are re-rendered after the answer (`refresh_reports`, a background task of the POST), not before
it: for a 200-step run that is 1–3.5 s the operator would otherwise wait for nothing. It first gives a worker a
moment to take the decision up: a resume that starts writes the reports itself when it stops, so the console does not
render them too, on the same cores, while that resume is getting under way."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any

from openadapt_flow.errors import FlowError, RefusedError, UsageError
from openadapt_flow.records.states import DecisionKind
from openadapt_flow.report.meanings import after_decision
from openadapt_flow.report.model import build_report
from openadapt_flow.report.page import render_html
from openadapt_flow.report.render import render_markdown
from openadapt_flow.runtime import DECISION_NAMES, DecisionOptions, approve, decided_by, deliver
from openadapt_flow.store import RunHandle, RunStore, StorageFault

PAUSE_ID = re.compile(r"pause-[A-Za-z0-9]{1,64}")  # a form's pause id, before it names a file in the run
REPORT_GRACE_S = 2.0  # how long the console waits for a worker's resume to take a decision up before it reports
GRACE_POLL_S = 0.05  # how often it looks at the run's stamp meanwhile (three stats on a run directory)


def _point(form: dict[str, Any]) -> tuple[int, int]:
    try:
        return round(float(form["x"])), round(float(form["y"]))
    except (KeyError, TypeError, ValueError):
        raise UsageError("teach needs the point clicked on the halt frame") from None


@dataclass(frozen=True)
class Decided:
    """What the console answers: a one-line summary, and the run's stamp right after a recorded operator decision
    (None when nothing new was recorded, or for an answer or signal, which `flow answer`/`signal` do not report)."""

    summary: str
    stamp: Any = None
    next: str = ""  # what happens to the run now, naming the next command (report/meanings.py)


def decide_from_form(store: RunStore, run: RunHandle, operator: str, form: dict[str, Any]) -> Decided:
    """Record the decision in `form` for `run`'s open pause. The form names the pause it was shown: a pause decided,
    resumed or re-issued since (a replayed or stale form, another run's pause) is refused."""
    pending = run.read_pending() if run.has_pending() else None
    pause_id = str(form.get("pause_id") or "")
    if pending is None or pending.get("pause_id") != pause_id:
        decided = (
            run.read_decision(pause_id) if PAUSE_ID.fullmatch(pause_id) else None
        )  # consumed: the loser is told who won
        if decided is not None:
            raise RefusedError(f"{run.ref}: pause {pause_id} is {decided_by(decided)}; nothing recorded")
        raise RefusedError(
            f"{run.ref}: pause {pause_id or '?'} is not open on this run (decided, resumed, re-issued or "
            f"another run's); nothing recorded"
        )
    decision = str(form.get("decision") or "")
    note = str(form.get("note") or "") or None
    audit = store.operators().audit
    if decision in (DecisionKind.ANSWER, DecisionKind.SIGNAL):
        data = None
        if decision == DecisionKind.SIGNAL and form.get("data"):
            try:
                data = json.loads(str(form["data"]))
            except ValueError:
                raise UsageError("signal data must be JSON") from None
        out = deliver(
            run,
            decision,
            operator,
            value=str(form.get("value") or ""),
            name=str(form.get("signal") or ""),
            data=data,
            channel="console",
            options=DecisionOptions(audit=audit),
        )
    elif decision in DECISION_NAMES:
        point = _point(form) if decision == DecisionKind.TEACH else None
        effect = str(form["effect"]) if decision == DecisionKind.RECONCILE and form.get("effect") else None
        out = approve(
            run,
            decision,
            operator,
            note=note,
            effect=effect,
            channel="console",
            options=DecisionOptions(point=point, audit=audit),
        )
    else:
        raise UsageError(f"unknown decision {decision!r}")
    if out.get("noop"):
        return Decided(f"already recorded: {decision}")
    votes = f" ({out['votes']} of {out['quorum']})" if "votes" in out and out.get("quorum", 1) > 1 else ""
    stamp = run.stamp() if out.get("recorded") and decision in DECISION_NAMES else None
    after = (
        after_decision(run.ref, out)
        if decision in DECISION_NAMES
        else (f"a `flow worker` watching this store resumes the run; without one, run `flow resume {run.ref}`")
    )
    return Decided(f"recorded: {decision} by {operator}{votes}", stamp, after)


def refresh_reports(run: RunHandle, stamp: Any, grace_s: float = REPORT_GRACE_S) -> bool:
    """Re-render `run`'s reports as `flow approve` does after a decision (its "next" becomes the resume), unless the
    run moves on within `grace_s` or while they render (its stamp changes: a resume started, which writes the reports
    itself when it stops, or another decision, which renders its own). True if written. A report only reads: a failure
    to render leaves the old files for `flow report` to redo."""
    deadline = time.monotonic() + grace_s
    try:
        while run.stamp() == stamp and time.monotonic() < deadline:
            time.sleep(GRACE_POLL_S)
        if run.stamp() != stamp:
            return False
        rep = build_report(run)
        markdown, page = render_markdown(rep), render_html(run, rep)
        if run.stamp() != stamp:
            return False
        run.write_reports(rep, markdown, page)
    except (FlowError, StorageFault):
        return False
    return True
