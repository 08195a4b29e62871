"""Plain words for the tool's terms, in one table each: what every operator decision does (`flow approve --help`, the
console's buttons, the report), what a transaction outcome means, and what the template rung's figures measure."""

from __future__ import annotations

import re
import shlex

from openadapt_flow.records.pausedoc import DecisionOutcome
from openadapt_flow.records.states import DecisionKind, RunState

# what each decision does to the run; the names are runtime/operate/approval.py's DECISION_NAMES (a test holds them equal)
DECISIONS: dict[str, str] = {
    "continue": "resume checks the live screen and any step that may have acted, then carries on from the last "
    "verified checkpoint",
    "skip": "the halted step is journaled as skipped and the run goes on after it (only for steps declared "
    "skippable: true, or a verified step whose screen a resume could not re-prove)",
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

# the halt categories a person reads first, short (a headline), then at length (a sentence); `{target}` is the
# target's label where the message names one
CATEGORY_WORDS: dict[str, tuple[str, str]] = {
    "ambiguous": (
        "two {target} look the same",
        "two places on the screen match the target equally well, and the engine never guesses between look-alikes",
    ),
    "resolution": ("{target} was not found on the screen", "the target was not found on the screen"),
    "identity": (
        "the record on the screen is not the one the step is meant to change",
        "the record on screen was not the one the step is meant to change",
    ),
    "effect": (
        "the system of record did not show the step's change",
        "the system of record did not show the change the step declares",
    ),
    "postcondition": (
        "the screen did not show what the step expects",
        "the screen did not show what the step expects afterwards",
    ),
    "start_state": (
        "the app is not on the screen the run starts from",
        "the app was not on the screen the bundle starts from, so no input was sent",
    ),
    "collateral": ("the step changed more than it declares", "the system of record changed in ways no step declares"),
    "backend": ("the desktop could not be reached", "the desktop (VNC/RDP) could not be reached or was lost"),
    "approval": ("a step asks for approval before it acts", "the step is declared to wait for approval before it acts"),
    "uncertain": (
        "a step may have acted and could not be checked",
        "a step was sent and its result could not be checked yet",
    ),
}
# the transaction outcome in the fewest words (OUTCOMES says it at length)
OUTCOME_SHORT: dict[str, str] = {
    "HALTED_BEFORE_EFFECT": "nothing was written",
    "RECONCILIATION_REQUIRED": "a write may have landed: check it before going on",
}
# a COMPLETED run whose outcome (its last consequential step) nothing that depends on its params checked
# (bundle/outcome.py): said instead of a plain "finished", for a wrong result would have finished the same
UNVERIFIED = "outcome not verified"


def unverified_words(step_id: str) -> str:
    return (
        f"{UNVERIFIED}: nothing that depends on the params checked step {step_id!r} (a wrong result would have "
        "finished the same); give it an expect with a {param} or a declared effect"
    )


STATE_WORDS: dict[str, str] = {
    "PENDING": "queued",
    "RUNNING": "running",
    "RESUMING": "resuming",
    "COMPLETED": "finished",
    "FAILED": "failed",
    "FAILED_AFTER_EFFECT": "failed after its write landed",
    "BLOCKED": "blocked",
    "INTERRUPTED": "interrupted (flow resume continues it)",
}
PAUSED_WORDS: dict[str, str] = {
    "awaiting_approval": "waiting for a decision",
    "awaiting_user": "waiting for an answer",
    "awaiting_signal": "waiting for a signal",
    "awaiting_timer": "waiting for its timer",
    "awaiting_child": "waiting for its child run",
    "suspended_orphan": "suspended: its parent run is gone",
}
_TARGET = re.compile(r'target "([^"]{1,40})"')

FIGURES = (
    "rank: how well the saved crop matches at that place overall, 0 to 1 (shape and content together); "
    "shape: how well the outlines line up; content: how much of the crop's inner detail (its text, its icon) "
    "is the same. A step is found when the rank clears the threshold and beats every other place by the margin."
)

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
        return (
            f"the run stays PAUSED; the decision now belongs to level {out.get('level')} (pause "
            f"{out.get('pause_id')}): an operator there decides with `flow approve {run} --decision ...`"
        )
    if decision == DecisionKind.REJECT:
        return "the run is BLOCKED for good; nothing more is sent to the desktop"
    if out.get("settled"):
        return (
            f"the answer is journaled: the run stays {out.get('state')}, transaction_outcome "
            f"{out.get('transaction_outcome')}; nothing is sent to the desktop and the run does not resume (`flow "
            f"status {run}`)"
        )
    votes, quorum = out.get("votes"), out.get("quorum") or 1
    if isinstance(votes, int) and votes < quorum:
        return f"{votes} of {quorum} approvals so far: another operator must decide before the run can go on"
    then = (
        f"; once it has run, `flow patch apply {run} BUNDLE_DIR` writes what you taught into your bundle"
        if decision == DecisionKind.TEACH
        else ""
    )
    return (
        f"a `flow worker` watching this run's store picks it up; without one, run `flow resume {run} "
        f"--require-approval`{then}"
    )


def category_words(category: object, message: object = None, long: bool = False) -> str | None:
    """A halt category in plain words (None for none or an unknown one); the target's label from the message."""
    words = CATEGORY_WORDS.get(str(category)) if category else None
    if words is None:
        return None
    found = _TARGET.search(str(message or ""))
    label = f'"{found.group(1)}"' if found else "targets" if category == "ambiguous" else "the target"
    return (words[1] if long else words[0]).replace("{target}", label)


def headline(
    state: object, paused_reason: object = None, category: object = None, message: object = None, outcome: object = None
) -> str:
    """The run in one line of plain words, what a person reads first ("waiting for a decision: two "Save" look the
    same; nothing was written"); the codes go beside it, never instead of it."""
    paused = state == RunState.PAUSED
    head = PAUSED_WORDS.get(str(paused_reason), "paused") if paused else STATE_WORDS.get(str(state), str(state).lower())
    going = state in (RunState.COMPLETED, RunState.RUNNING, RunState.PENDING)  # nothing stopped it: no why
    why = None if going else category_words(category, message)
    if why is None and state == RunState.BLOCKED and message:
        why = str(message)  # who or what blocked it ("rejected by alice", a policy's rule)
    short = OUTCOME_SHORT.get(str(outcome)) if outcome else None
    return head + (f": {why}" if why else "") + (f"; {short}" if short else "")


def codes(state: object, paused_reason: object = None, category: object = None, outcome: object = None) -> str:
    """The codes a headline stands for, for beside it: `PAUSED awaiting_approval · ambiguous · HALTED_BEFORE_EFFECT`."""
    first = f"{state} {paused_reason}" if paused_reason else str(state)
    return " · ".join(str(c) for c in (first, category, outcome) if c)
