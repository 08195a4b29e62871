"""A GUI step's declared effect through its lifecycle (spec §5, §8): the baseline read before any input, the
verification after its postconditions, and the read after a postcondition failed — so a halt says whether the
write landed, was not made, or made more than the step declares (a collateral write), whenever it can be read."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from openadapt_flow.bundle.effect import Effect
from openadapt_flow.bundle.models import Step
from openadapt_flow.errors import FlowError
from openadapt_flow.ladder.types import Point
from openadapt_flow.records.models import EffectVerdict
from openadapt_flow.records.states import RecordType
from openadapt_flow.runtime.judge.halt import MAX_MESSAGE, Halt
from openadapt_flow.runtime.start.context import RunContext
from openadapt_flow.verify.effects import (
    ABSENT,
    CONFIRMED,
    Reading,
    Verifier,
    make_verifier,
    resolve_effect,
    verify_effect,
)
from openadapt_flow.verify.snapshot import summary


@dataclass
class Baseline:
    """A declared effect, its verifier and what the system of record held before the step."""

    effect: Effect
    verifier: Verifier
    reading: Reading


def take_baseline(ctx: RunContext, step: Step, frame: np.ndarray, point: Point | None) -> Baseline | None:
    """Read the declared effect's system of record before any input; halt if no reading could prove the effect."""
    if step.effect is None:
        return None
    effect = resolve_effect(step.effect, ctx.config.effects)
    verifier = make_verifier(
        effect, ctx.params.values | {"run_id": ctx.run_id}, key=ctx.journal.key, secrets=ctx.params.secrets
    )
    baseline = verifier.read()
    ctx.journal.append(RecordType.EFFECT_BASELINE, step.id, baseline.to_json())
    blocked = verifier.blocks(baseline)
    if blocked is not None:  # no baseline, or one that already holds: no reading could prove this step's effect
        raise Halt(
            "effect",
            f"step {step.id!r}: {blocked}; no input was sent",
            step=step.id,
            evidence=[
                {
                    "baseline": {**baseline.to_json(), "value": summary(baseline.value)},
                    "expect": effect.expect.model_dump(exclude_none=True),
                }
            ],
            frame=frame,
            point=point,
        )
    return Baseline(effect, verifier, baseline)


def _judged(ctx: RunContext, step: Step, baseline: Baseline, dispatched_at: float) -> EffectVerdict:
    """Poll the system of record until the declared effect is CONFIRMED or its verdict is final; journal it."""
    verdict = verify_effect(baseline.effect, baseline.verifier, baseline.reading, dispatched_at)
    ctx.journal.append(RecordType.EFFECT_VERIFIED, step.id, verdict.to_json())
    return verdict


def evidence(verdict: EffectVerdict) -> dict[str, object]:
    """The verdict as a halt's evidence: a whole-change snapshot as its row counts (the journal's `effect_verified`
    keeps the digests; the changed rows are listed either way)."""
    doc: dict[str, object] = dict(verdict.to_json())
    for k in ("baseline", "observed"):
        read = doc.get(k)
        if isinstance(read, dict):
            doc[k] = {**read, "value": summary(read.get("value"))}
    return doc


def collateral(verdict: EffectVerdict) -> bool:
    """Did a whole-change effect see a change the step does not declare?"""
    return any(not c.get("expected") for c in verdict.changes or [])


def _why(verdict: EffectVerdict) -> str:
    error = verdict.observed.error if verdict.observed and verdict.observed.error else None
    return error or verdict.detail or "expectation not met"


def check_effect(ctx: RunContext, step: Step, baseline: Baseline, dispatched_at: float) -> EffectVerdict:
    """The declared effect, CONFIRMED; any other verdict halts the step (a collateral write with category
    `collateral`)."""
    verdict = _judged(ctx, step, baseline, dispatched_at)
    if verdict.verdict != CONFIRMED:
        raise Halt(
            "collateral" if collateral(verdict) else "effect",
            f"step {step.id!r}: declared effect is {verdict.verdict} after {verdict.waited_s:.1f}s ({_why(verdict)})",
            step=step.id,
            dispatched=True,
            evidence=[evidence(verdict)],
            frame=ctx.backend.capture().pixels,
        )
    return verdict


def read_after(ctx: RunContext, step: Step, baseline: Baseline, dispatched_at: float, h: Halt) -> None:
    """A check failed after the input was sent: read the declared effect anyway (spec §8) and say in the halt what
    it read — not only that the write is unknown. The halt stands."""
    try:
        verdict = _judged(ctx, step, baseline, dispatched_at)
    except FlowError as e:  # its effect stays unverified
        _amend(h, f"; its effect could not be read after it ({e})")
        return
    h.evidence.append(evidence(verdict))
    if verdict.verdict == CONFIRMED:
        _amend(
            h,
            f" — its write landed (the effect read CONFIRMED {verdict.waited_s:.1f}s after the input); the "
            "check failed after it",
        )
    elif verdict.verdict == ABSENT:
        _amend(h, f"; nothing was written (the effect read ABSENT {verdict.waited_s:.1f}s after the input)")
    else:
        if collateral(verdict):
            h.category = "collateral"
        _amend(h, f"; its effect read {verdict.verdict} ({_why(verdict)})")


def _amend(h: Halt, more: str) -> None:
    """Add what the effect said to the halt's message, cutting the message before it (not it) to stay short."""
    room = max(0, MAX_MESSAGE - len(more))
    h.message = (h.message if len(h.message) <= room else h.message[: max(0, room - 1)] + "…") + more
    h.message = h.message[:MAX_MESSAGE]
