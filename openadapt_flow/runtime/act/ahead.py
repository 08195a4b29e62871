"""The next step's target found ahead: while the settle after a step's input waits out its quiet time (spec §5: no
input goes before the screen is settled), the ladder resolves the next step's target, and reads its identity text, on
the frame that is likely to be settled. The next step uses that work only for the very frame it was done on (the same
read-only pixels: the screen did not change since) and the same interpolated target; it journals it and acts on it as
on its own resolve. Nothing is guessed and nothing is sent ahead: it is the same computation, done earlier.

Only where resolving has no effect outside itself: no model rung (a model call is budgeted and journaled), a GUI step
with a target and no drag end.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from openadapt_flow.backends.base import Frame
from openadapt_flow.bundle.models import Step, Target
from openadapt_flow.ladder.types import Resolution
from openadapt_flow.records.models import Check
from openadapt_flow.runtime.start.context import RunContext


@dataclass
class Ahead:
    """A step's resolve (and identity check) done on `pixels` before the step began."""

    step_id: str
    pixels: np.ndarray
    target: Target  # interpolated, as resolved
    res: Resolution
    identity_text: str | None = None
    identity: Check | None = None


def interp_target(ctx: RunContext, t: Target) -> Target:
    """The target with its texts interpolated (the params, the run's values)."""
    return t.model_copy(
        update={
            "text": ctx.interp(t.text) if t.text else None,
            "landmarks": [lm.model_copy(update={"text": ctx.interp(lm.text)}) for lm in t.landmarks],
        }
    )


def can_look_ahead(ctx: RunContext, step: Step) -> bool:
    """Whether resolving this step's target early has no effect outside itself."""
    ladder = ctx.ladder
    return (
        step.target is not None
        and step.to is None
        and not step.is_durable_kind
        and step.action != "flow"
        and not (ladder.options.allow_model or getattr(ladder, "_model", None) is not None)
    )


def found_ahead(ctx: RunContext, step: Step, pixels: np.ndarray, target: Target) -> Ahead | None:
    """What was done ahead for this step on exactly these pixels and this target, else None."""
    ahead = ctx.ahead
    if (
        isinstance(ahead, Ahead)
        and ahead.step_id == step.id
        and ahead.pixels is pixels
        and not pixels.flags.writeable
        and ahead.target == target
    ):
        return ahead
    return None


def next_gui_step(ctx: RunContext, index: int) -> Step | None:
    """The step after this one, when its target may be resolved ahead (runtime/act/ahead.py)."""
    steps = ctx.model.steps
    nxt = steps[index + 1] if index + 1 < len(steps) else None
    return nxt if nxt is not None and can_look_ahead(ctx, nxt) else None


def look_ahead(ctx: RunContext, step: Step, frame: Frame) -> None:
    """Resolve `step`'s target (and read its identity text) on `frame`, for the step to use if its frame is this one."""
    if frame.pixels.flags.writeable or step.target is None:
        return
    try:
        wanted = interp_target(ctx, step.target)
        res = ctx.ladder.resolve(frame.pixels, wanted, consequential=step.is_consequential, intent=step.intent)
        ahead = Ahead(step.id, frame.pixels, wanted, res)
        if res.ok and res.point is not None and step.identity is not None:
            ahead.identity_text = ctx.interp(step.identity.text)
            scale = res.winning.scale if res.winning else None
            ahead.identity = ctx.checks.identity(
                frame.pixels, res.point, step.identity.near, ahead.identity_text, scale
            )
    except Exception:  # noqa: BLE001 - work done early never fails a step: the step does it itself then
        return
    ctx.ahead = ahead
