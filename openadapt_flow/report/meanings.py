"""Plain words for the tool's terms, in one table each: what every operator decision does (`flow approve --help`, the
console's buttons, the report), what a transaction outcome means, and what the template rung's figures measure."""

from __future__ import annotations
from openadapt_flow.store.pausedoc import DecisionOutcome
from openadapt_flow.store.states import DecisionKind

import re
import shlex

# what each decision does to the run; the names are runtime/operate/approval.py's DECISION_NAMES (a test holds them equal)
DECISIONS: dict[str, str] = {
    "continue": "resume checks the live screen and any step that may have acted, then carries on from the last "
                "verified checkpoint",
    "skip": "the halted step is journaled as skipped and the run goes on after it (only for steps declared "
            "skippable: true)",
    "reject": "the run ends BLOCKED with an incident naming you; nothing more is sent",
    "teach": "your point (or crop) on the halt frame becomes a reviewable patch; resume finds that target afresh on "
             "the live screen",
    "escalate": "the run stays PAUSED and the decision goes to the next approval level (config approvals.levels) "
                "with a new pause id",
    "reconcile": "says whether the uncertain write happened: --effect landed counts the step as done, --effect absent "
                 "lets resume perform it again; on a non-durable run that stopped, it records the answer and the run's "
                 "outcome (the run stays stopped)",
}

OUTCOMES: dict[str, str] = {
    "HALTED_BEFORE_EFFECT": "the run stopped before the step's write was sent: nothing was written, so resuming is "
                            "safe",
    "RECONCILIATION_REQUIRED": "the step's write may or may not have happened (input was sent, the effect was not "
                               "confirmed): someone must check and say which (flow approve --decision reconcile)",
}

FIGURES = ("rank: how well the saved crop matches at that place overall, 0 to 1 (shape and content together); "
           "shape: how well the outlines line up; content: how much of the crop's inner detail (its text, its icon) "
           "is the same. A step is found when the rank clears the threshold and beats every other place by the margin.")

_FIGURE_WORDS = re.compile(r"\b(rank|shape|content) \d")


def outcome_words(outcome: object) -> str | None:
    """The plain words beside a transaction outcome (None for no outcome or an unknown one)."""
    return OUTCOMES.get(str(outcome)) if outcome else None


def mentions_figures(text: object) -> bool:
    """Whether a message quotes the template rung's figures (rank, shape, content), which then need FIGURES beside."""
    return bool(text) and bool(_FIGURE_WORDS.search(str(text)))


def after_decision(ref: str, out: DecisionOutcome) -> str:
    """What happens to a run after a decision was recorded on it (`out`: what `approve` returned), in one sentence
    that names the next command."""
    run, decision = shlex.quote(ref), out.get("decision")
    if out.get("noop"):
        return "nothing new was recorded; the run goes on as the first decision said"
    if decision == DecisionKind.ESCALATE:
        return (f"the run stays PAUSED; the decision now belongs to level {out.get('level')} (pause "
                f"{out.get('pause_id')}): an operator there decides with `flow approve {run} --decision ...`")
    if decision == DecisionKind.REJECT:
        return "the run is BLOCKED for good; nothing more is sent to the desktop"
    if out.get("settled"):
        return (f"the answer is journaled: the run stays {out.get('state')}, transaction_outcome "
                f"{out.get('transaction_outcome')}; nothing is sent to the desktop and the run does not resume (`flow "
                f"status {run}`)")
    votes, quorum = out.get("votes"), out.get("quorum") or 1
    if isinstance(votes, int) and votes < quorum:
        return f"{votes} of {quorum} approvals so far: another operator must decide before the run can go on"
    then = (f"; once it has run, `flow patch apply {run} BUNDLE_DIR` writes what you taught into your bundle"
            if decision == DecisionKind.TEACH else "")
    return (f"a `flow worker` watching this run's store picks it up; without one, run `flow resume {run} "
            f"--require-approval`{then}")
