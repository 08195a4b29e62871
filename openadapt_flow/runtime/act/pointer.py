"""Hover is irrelevant at replay (issue 33, item 5): before the first frame a run resolves a target on, the pointer is
parked where it hovers nothing the run looks at.

Whatever ran before (the previous item of a batch, a person, another tool) may have left the pointer on this run's
first target, which then shows its hovered look (a highlight, a ring, a tooltip) and not the look it was recorded
in. Once parked, the pointer is where this run's own steps leave it, as it was when the demonstration was
recorded (the recorder cuts every template from a frame with the pointer away from it).

Where: the middle of the frame's right edge, PARK_INSET px in — no desktop puts a hot corner or an edge action
there by default (hot corners sit at the corners: GNOME's and KDE's top-left, macOS's configured corners, pyautogui's
fail-safe; the Windows taskbar, the macOS Dock and GNOME's top bar reveal or preview on the bottom, left or top
edges), and a maximised app has at most a scrollbar there. When the first target's own search window holds that
place, the left edge's middle instead. The move presses nothing; it is journaled (`pointer_parked`) and fenced
by the lease like any input.

In a batch the pointer is handed over from one item to the next: a run told another item follows (`park_after`)
parks the pointer right after its last input, before that step's settle, so one quiet wait covers both the input's
reaction and the hover the pointer leaves, and between items the pointer rests on nothing (no tooltip can open over
the next item's first target). The next item's run, told the run before ended so (`parked`), does not park again: the
pointer is where this process put it and nothing was sent since. A run that stopped early hands nothing over.
"""

from __future__ import annotations

from openadapt_flow.bundle.models import GUI_ACTIONS, Target
from openadapt_flow.ladder.types import Box, Point
from openadapt_flow.records.states import RecordType
from openadapt_flow.runtime.act.settle import settle
from openadapt_flow.runtime.start.context import RunContext

PARK_INSET = 2  # px from the frame's edge: on the screen, off the very edge
PARK_REACT_S = 0.1  # how long a toolkit may take to begin repainting a widget the pointer left


def park_point(width: int, height: int, avoid: Box | None) -> Point:
    """The middle of the right edge, PARK_INSET px in; the left edge's middle when `avoid` holds that."""
    right = (width - 1 - PARK_INSET, height // 2)
    if avoid is not None and _inside(right, avoid):
        return (PARK_INSET, height // 2)
    return right


def park_pointer(ctx: RunContext, step_id: str | None, target: Target | None) -> None:
    """Once per run and process, before the first frame a target is resolved on (or a start state is judged on):
    fence, journal, move, settle. `target`: the first target, whose search window the place must avoid."""
    if ctx.pointer_parked:
        return
    frame = ctx.backend.capture()
    window = ctx.ladder.window(target, frame.width, frame.height) if target is not None else None
    _park(
        ctx,
        step_id,
        park_point(frame.width, frame.height, window),
        "where the pointer was left is unknown: a hover there would change a target's look",
    )
    ctx.pointer_parked = True
    rt = ctx.config.runtime
    settle(ctx.backend, rt.settle_quiet_s, rt.settle_timeout_s, expect_change_s=PARK_REACT_S)


WAITS = ("wait", "sleep", "wait_until", "wait_signal", "ask_user")  # steps that never move the pointer


def park_after_input(ctx: RunContext, index: int) -> None:
    """After step `index`'s input was sent: when another item follows and no later step of this run can move the
    pointer, park it (fenced, journaled, no settle: the step's own settle follows)."""
    steps = ctx.model.steps
    if (
        not ctx.park_after
        or steps[index].action not in GUI_ACTIONS
        or steps[index].action in WAITS
        or any(s.action not in WAITS for s in steps[index + 1 :])
    ):
        return
    frame = ctx.backend.capture()
    first = next((s.target for s in steps if s.target is not None), None)
    at = park_point(frame.width, frame.height, ctx.ladder.window(first, frame.width, frame.height) if first else None)
    _park(ctx, steps[index].id, at, "another item follows: between items the pointer hovers nothing")
    ctx.parked_at_end = True


def _park(ctx: RunContext, step_id: str | None, at: Point, why: str) -> None:
    """The one writer of `pointer_parked`: fence (a stalled owner must not move another owner's pointer either),
    journal, move."""
    if ctx.lease is not None:
        ctx.lease.fence()
    ctx.journal.append(RecordType.POINTER_PARKED, step_id, {"at": list(at), "why": why})
    ctx.backend.move(*at)


def _inside(p: Point, box: Box) -> bool:
    x, y, w, h = box
    return x <= p[0] < x + w and y <= p[1] < y + h
