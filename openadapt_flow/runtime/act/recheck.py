"""Read-only re-checks on resume (spec §8): an uncertain step's effect and screen, the checkpoint's screen facts."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

from openadapt_flow.bundle.models import Postcondition, Step
from openadapt_flow.errors import ConfigError
from openadapt_flow.records.entry import JournalEntry
from openadapt_flow.records.kinds import CheckDoc, RecheckVerdict
from openadapt_flow.records.states import RecordType, is_a
from openadapt_flow.records.stepdoc import RecheckedEffect, ScreenFact
from openadapt_flow.runtime.act.pointer import park_pointer
from openadapt_flow.runtime.act.settle import settle
from openadapt_flow.runtime.act.step import screen_facts
from openadapt_flow.runtime.start.context import RunContext
from openadapt_flow.verify.effects import ABSENT, CONFIRMED, Judgement, Reading, make_verifier, resolve_effect

CONFIRMED_DONE: Final = "CONFIRMED"  # the step's work landed: checkpoint it, send no input
POSITIVELY_ABSENT: Final = "ABSENT"  # it provably did not land: it may be performed again
UNKNOWN: Final = "UNKNOWN"  # cannot tell: only an operator's reconcile decision moves on
RETRYABLE: Final = "RETRYABLE"  # a non-consequential step whose screen effect is not there: safe to perform again


@dataclass
class Uncertain:
    index: int
    step: Step
    dispatch: JournalEntry  # its last action_dispatched record
    baseline: Reading | None  # what its effect_baseline read, if one preceded that dispatch


@dataclass
class RecheckResult:
    verdict: RecheckVerdict
    effect: RecheckedEffect | None = None
    checks: list[CheckDoc] = field(default_factory=list)  # each check's JSON (its own evidence keys: open)


def find_uncertain(records: list[JournalEntry], steps: list[Step]) -> Uncertain | None:
    """The step whose last action_dispatched has no step_verified after it (at most one: steps run in order)."""
    index = {s.id: i for i, s in enumerate(steps)}
    last_dispatch: dict[str, JournalEntry] = {}
    baselines: dict[str, JournalEntry] = {}
    for r in records:
        sid = r.get("step")
        if not isinstance(sid, str):
            continue
        if is_a(r, RecordType.EFFECT_BASELINE):
            baselines[sid] = r
        elif is_a(r, RecordType.ACTION_DISPATCHED):
            last_dispatch[sid] = r
        elif is_a(r, RecordType.STEP_VERIFIED, RecordType.STEP_SKIPPED):
            last_dispatch.pop(sid, None)
    if not last_dispatch:
        return None
    sid, rec = max(last_dispatch.items(), key=lambda kv: kv[1]["seq"])
    base = baselines.get(sid)
    if base is not None and base["seq"] > rec["seq"]:
        base = None
    b = base["data"] if base is not None else None
    reading = Reading(bool(b.get("ok")), b.get("value"), error=b.get("error", "")) if b is not None else None
    return Uncertain(index[sid], steps[index[sid]], rec, reading)


def _epoch(ts: str) -> float:
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


def check_facts(ctx: RunContext, facts: list[ScreenFact], step: Step | None = None) -> list[CheckDoc]:
    """Judge one-frame screen facts on a fresh, settled frame, the pointer parked first as a fresh run parks it
    before its first frame: left on the text a fact reads (by a person, another run), it hides it, and every re-check
    would fail. `step`: the step the facts are of (its target's search window is kept clear)."""
    park_pointer(ctx, step.id if step is not None else None, step.target if step is not None else None)
    rt = ctx.config.runtime
    frame = settle(ctx.backend, rt.settle_quiet_s, rt.settle_timeout_s).frame.pixels
    pcs = [Postcondition.model_validate(fact) for fact in facts]
    return [c.to_json() for c in ctx.checks.postconditions(pcs, [pc.text for pc in pcs], frame, None)]


def recheck(ctx: RunContext, u: Uncertain) -> RecheckResult:
    """Re-read the uncertain step's effect (no sooner than timeout_s after dispatch) and its screen; send no input."""
    step = u.step
    facts = screen_facts(ctx, step)
    checks = check_facts(ctx, facts, step) if facts else []
    screen_ok = bool(checks) and all(c["ok"] for c in checks)
    if step.effect is None:
        if step.is_consequential:
            return RecheckResult(UNKNOWN, None, checks)  # a write with no verifier is unverifiable
        return RecheckResult(CONFIRMED_DONE if screen_ok else RETRYABLE, None, checks)
    effect = resolve_effect(step.effect, ctx.config.effects)
    due = _epoch(u.dispatch["ts"]) + effect.timeout_s
    wait = due - time.time()
    if wait > 0:
        ctx.stop.wait(wait)  # ABSENT is only positive once timeout_s has passed since dispatch
    baseline = u.baseline
    try:
        verifier = make_verifier(
            effect, ctx.params.values | {"run_id": ctx.run_id}, key=ctx.journal.key, secrets=ctx.params.secrets
        )
        observed = verifier.read()
        judged = verifier.judge(baseline, observed)
    except ConfigError as e:  # a verifier that cannot even be built reads nothing: unknown, not absent
        observed = Reading(False, error=str(e))
        judged = Judgement("UNAVAILABLE")
    verdict = judged.verdict
    ev: RecheckedEffect = {
        "verdict": verdict,
        "baseline": baseline.to_json() if baseline else None,
        "observed": observed.to_json(),
        "read_after_dispatch_s": round(time.time() - _epoch(u.dispatch["ts"]), 3),
    }
    if judged.changes is not None:
        ev["changes"] = judged.changes
    if verdict == CONFIRMED:
        return RecheckResult(CONFIRMED_DONE if screen_ok or not checks else UNKNOWN, ev, checks)
    if verdict == ABSENT:
        return RecheckResult(POSITIVELY_ABSENT, ev, checks)
    return RecheckResult(UNKNOWN, ev, checks)
