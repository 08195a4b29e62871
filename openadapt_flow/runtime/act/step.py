"""The step lifecycle (spec §5) — the one place that journals, acts and verifies.

step_started → settle → resolve → identity gate → effect baseline →
action_dispatched (fsync'd BEFORE any input) → act → settle → postconditions →
effect verification → step_verified.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from openadapt_flow.backends.base import Frame
from openadapt_flow.bundle.keys import normalise_key
from openadapt_flow.bundle.models import Postcondition, Step, Target
from openadapt_flow.errors import BackendError, FlowError
from openadapt_flow.ladder.types import Box, Point, Resolution
from openadapt_flow.records.models import Check, EffectVerdict
from openadapt_flow.records.states import RecordType
from openadapt_flow.records.stepdoc import ScreenFact, Verification, VerifiedData
from openadapt_flow.runtime.act.ahead import Ahead, found_ahead, interp_target, look_ahead, next_gui_step
from openadapt_flow.runtime.act.durable import calls
from openadapt_flow.runtime.act.effect_check import check_effect, read_after, take_baseline
from openadapt_flow.runtime.act.pointer import park_after_input, park_pointer
from openadapt_flow.runtime.act.settle import settle
from openadapt_flow.runtime.judge.halt import Halt, StopRequested
from openadapt_flow.runtime.judge.policy import model_call_refusal
from openadapt_flow.runtime.start.context import RunContext
from openadapt_flow.verify.field import FIELD_IDENTITY, field_identity, relations
from openadapt_flow.verify.place import Anchor, Placement, agreed_shift
from openadapt_flow.verify.screen import SCREEN_CHANGED, verification_plan
from openadapt_flow.vision.caret import caret_appeared
from openadapt_flow.vision.diff import changed_box
from openadapt_flow.vision.mask import FIELD_HALF_HEIGHT, field_band

REACT_S = 0.3  # how long an app may take to begin reacting to input
# How a `type` step selects the field's content so that typing replaces it (docs/bundle.md, "type"):
# F2 opens the editor of a table cell that is not in edit mode yet (Qt item views, spreadsheets; the editor opens
# with its text) and is ignored by a text field or spin box; End then Shift+Home selects the text of the single-line
# field that has the keys now, in Tk, GTK, Qt and Win32. Ctrl+A would select every cell of a table and, in Tk,
# move the caret instead of selecting; End and Shift+Home alone move a table's current cell (the typed value then
# lands in the row's first column).
SELECT_FIELD_KEYS = (["f2"], ["end"], ["shift", "home"])


@dataclass
class StepRecord:
    """What the engine reports about one verified step."""

    step_id: str
    rung: str | None = None
    score: float | None = None
    point: Point | None = None
    elapsed_ms: float = 0.0
    checks: list[Check] = field(default_factory=list)
    effect: EffectVerdict | None = None
    data: VerifiedData | None = None  # what its step_verified record says (runtime/act/durable records it)


_interp_target = interp_target


def _resolve(ctx: RunContext, step: Step, target: Target, frame: Frame, role: Literal["target", "to"]) -> Resolution:
    calls_before = ctx.ladder.model_calls
    wanted = _interp_target(ctx, target)
    ahead = found_ahead(ctx, step, frame.pixels, wanted) if role == "target" else None
    res = (
        ahead.res
        if ahead is not None
        else ctx.ladder.resolve(
            frame.pixels,
            wanted,
            consequential=step.is_consequential,
            intent=step.intent,
            model_gate=lambda: model_call_refusal(ctx.config.policy, ctx.budget, step),
        )
    )
    ctx.journal.append(
        RecordType.RESOLVED,
        step.id,
        {
            "role": role,
            "ok": res.ok,
            "rung": res.rung,
            "point": list(res.point) if res.point else None,
            "category": res.category,
            "message": res.message,
            "evidence": [e.to_json() for e in res.evidence],
            "model_calls": ctx.ladder.model_calls - calls_before,  # this resolve's calls; budgets sum them
        },
    )
    if not res.ok:
        best = max((e for e in res.evidence if e.box), key=lambda e: e.score or 0.0, default=None)
        searched = next((e.search for e in res.evidence if e.search), None)
        raise Halt(
            res.category or "resolution",
            res.message or f"could not resolve the {role} of step {step.id!r}",
            step=step.id,
            evidence=[e.to_json() for e in res.evidence],
            frame=frame.pixels,
            search=searched,
            best=best.box if best and res.category != "ambiguous" else None,  # look-alikes: none is the answer
            template=wanted.template,
        )
    return res


QUIET_BEFORE_GIVING_UP_S = 0.5


def _resolve_while_changing(ctx: RunContext, step: Step, frame: Frame, deadline: float) -> tuple[Frame, Resolution]:
    """Resolve; if that fails while the screen is still changing (a slow app), settle and try again until the
    step's timeout. A screen that stays still for QUIET_BEFORE_GIVING_UP_S with no answer halts (no guessing)."""
    assert step.target is not None
    rt = ctx.config.runtime
    while True:
        remaining = deadline - time.monotonic()
        try:
            return frame, _resolve(ctx, step, step.target, frame, "target")
        except Halt:
            if (
                remaining <= 0
                or ctx.stop.is_set()
                or not ctx.backend.wait_for_update(min(QUIET_BEFORE_GIVING_UP_S, remaining))
            ):
                raise
        frame = settle(ctx.backend, rt.settle_quiet_s, max(0.1, min(rt.settle_timeout_s, remaining))).frame


def _guard_rung(step: Step, res: Resolution, frame: Frame) -> None:
    if step.is_consequential and res.rung not in ("template", "template-edges") and step.identity is None:
        raise Halt(
            "identity",
            f"step {step.id!r} is consequential and was resolved by the {res.rung} rung, but declares no identity gate",
            step=step.id,
            frame=frame.pixels,
            point=res.point,
        )


def _identity_gate(ctx: RunContext, step: Step, point: Point, frame: Frame, scale: float | None) -> None:
    """The step's identity text read near its target: at the scale the target's template matched at, else (found by
    its text: no scale known) anywhere the box reaches at the scales a template is searched at."""
    if step.identity is None:
        return
    text = ctx.interp(step.identity.text)
    ahead = ctx.ahead if isinstance(ctx.ahead, Ahead) else None
    if (
        ahead is not None
        and ahead.identity is not None
        and ahead.step_id == step.id
        and ahead.pixels is frame.pixels
        and ahead.identity_text == text
        and ahead.res.point == point
    ):
        check = ahead.identity  # read during the last settle, on this very frame
    else:
        check = ctx.checks.identity(frame.pixels, point, step.identity.near, text, scale)
    ctx.journal.append(RecordType.IDENTITY_CHECKED, step.id, check.to_json())
    if not check.ok:
        box = check.evidence.get("box")  # where the identity text was looked for
        raise Halt(
            "identity",
            f"identity gate of step {step.id!r}: expected text not read near the target ({check.detail})",
            step=step.id,
            frame=frame.pixels,
            search=(box[0], box[1], box[2], box[3]) if isinstance(box, list) and len(box) == 4 else None,
            point=point,
        )


def _act(
    ctx: RunContext, step: Step, point: Point | None, to_point: Point | None, before: np.ndarray, target_box: Box | None
) -> None:
    b = ctx.backend
    a = step.action
    if a in ("click", "double_click", "right_click"):
        assert point is not None
        b.click(
            point[0], point[1], button="right" if a == "right_click" else "left", count=2 if a == "double_click" else 1
        )
    elif a == "type":
        if point is not None:
            b.click(point[0], point[1])
            rt = ctx.config.runtime
            # The click is answered before the keys go: the screen settles and stays quiet until field_ready_s after
            # it. Toolkits hold a click for their double-click interval before acting on it alone (Qt opens an
            # already-selected table cell's editor only then, and takes keys sent sooner as table navigation).
            # A caret new in the clicked field ends the wait early: the field has the keys, nothing is pending.
            band = field_band(point, target_box, (ctx.checks.sx, ctx.checks.sy))
            settle(
                b,
                rt.settle_quiet_s,
                min(rt.settle_timeout_s, step.timeout_s),
                hold_s=rt.field_ready_s,
                ready=lambda f: caret_appeared(before, f.pixels, band),
            )
        if not step.append:
            for keys in SELECT_FIELD_KEYS:
                b.press(keys)
        assert step.text is not None
        b.type_text(ctx.interp(step.text, allow_secret=True))
    elif a == "key":
        for k in step.keys or []:
            b.press([normalise_key(k)])
    elif a == "hotkey":
        b.press([normalise_key(k) for k in step.keys or []])
    elif a == "scroll":
        x, y = point if point is not None else (ctx.model.screen.width // 2, ctx.model.screen.height // 2)
        b.scroll(x, y, int(step.clicks or 0))
    elif a == "drag":
        assert point is not None and to_point is not None
        b.drag(point[0], point[1], to_point[0], to_point[1])
    elif a == "wait":
        if step.seconds:
            ctx.stop.wait(step.seconds)  # a requested pause; a stop request cuts it short
    else:
        raise Halt("input", f"action {a!r} is a durable step kind and needs the durable runtime", step=step.id)


def _fallback_area(ctx: RunContext, step: Step, acted: list[Point], target_box: Box | None) -> tuple[bool, Box | None]:
    """Whether a step has nothing else to verify it, and then where it must change the screen (spec §5): around its
    target and the points it acted at, or anywhere (None) when it acted at no point (key, hotkey, typing into the
    focused field). Not needed when expect, an effect or the typed text's readback verifies it, nor for a wait
    (it sends no input)."""
    if verification_plan(step) != "weak":
        return False, None
    return True, ctx.checks.acted_area(acted, target_box)


def _anchor(ctx: RunContext, step: Step, point: Point | None, scale: float | None) -> Anchor | None:
    """Where the step's target was recorded and found: facts `relative_to: target` are placed by it. A template hit
    knows the scale it matched at; otherwise the screen's size ratio is the best guess."""
    recorded = step.target.recorded_point() if step.target is not None else None
    if recorded is None or point is None:
        return None
    return Anchor(recorded, point, (scale, scale) if scale else (ctx.checks.sx, ctx.checks.sy))


class _Checks:
    """A step's postcondition checks as a function of a frame, remembered for the last frame they were run on: the
    settle after the input runs them on its likely-settled frame while it waits out the quiet time, and the poll
    reuses them when that is the frame it captures (the same pixels: nothing changed since)."""

    def __init__(self, run: Callable[[np.ndarray], list[Check]]) -> None:
        self._run = run
        self._last: tuple[np.ndarray, list[Check]] | None = None

    def __call__(self, pixels: np.ndarray) -> list[Check]:
        if self._last is not None and self._last[0] is pixels and not pixels.flags.writeable:
            return self._last[1]
        checks = self._run(pixels)
        self._last = (pixels, checks) if not pixels.flags.writeable else None
        return checks

    def look(self, frame: Frame) -> None:
        self(frame.pixels)


def _checks(ctx: RunContext, step: Step, where: _Where, rung: str | None = None) -> _Checks:
    """The step's postconditions on a frame. A typed text is read back in the field, and the field must be the one
    the step means (`verify.field`)."""
    before, point, target_box, anchor = where.frame.pixels, where.point, where.target_box, where.anchor
    typed = None
    if step.action == "type" and step.text and not ctx.interp.uses_secret(step.text):
        typed = ctx.interp(step.text)
    texts = [ctx.interp(pc.text) if pc.text is not None else None for pc in step.expect]
    band = field_band(point, None, (ctx.checks.sx, ctx.checks.sy)) if typed and point is not None else None
    sx, sy = anchor.scale if anchor is not None else (ctx.checks.sx, ctx.checks.sy)
    scale = math.sqrt(sx * sy)
    field = (
        relations(_interp_target(ctx, step.target), rung, target_box, point, scale)
        if band is not None and point is not None and step.target is not None
        else []
    )
    fallback, area = _fallback_area(ctx, step, [p for p in (point, where.to_point) if p is not None], target_box)

    def run(pixels: np.ndarray) -> list[Check]:
        checks = ctx.checks.postconditions(step.expect, texts, pixels, before, anchor, where.shift)
        if typed and band is not None:
            checks.append(ctx.checks.readback(pixels, before, typed, band, point, step.append))
            if field and point is not None:
                checks.append(field_identity(ctx.checks.ocr, pixels, point, field, scale))
        if fallback:
            checks.append(ctx.checks.changed_where_acted(pixels, before, area))
        return checks

    return _Checks(run)


def _postconditions(ctx: RunContext, step: Step, check: _Checks, deadline: float) -> list[Check]:
    """Poll fresh frames until every postcondition holds, or halt at the step's timeout."""
    while True:
        frame = ctx.backend.capture()
        checks = check(frame.pixels)
        if all(c.ok for c in checks):
            if checks:
                ctx.journal.append(
                    RecordType.POSTCONDITIONS, step.id, {"ok": True, "checks": [c.to_json() for c in checks]}
                )
            return checks
        # a stop request is honoured after this step is verified (the next safe boundary), not here
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            failed = [c for c in checks if not c.ok]
            ctx.journal.append(
                RecordType.POSTCONDITIONS, step.id, {"ok": False, "checks": [c.to_json() for c in checks]}
            )
            pictured = next((c for c in failed if c.kind == "template_present"), None)
            at = pictured.evidence.get("at") if pictured is not None else None  # where it matched best
            raise Halt(
                "postcondition",
                f"step {step.id!r}: " + "; ".join(_failed(c, step) for c in failed),
                step=step.id,
                dispatched=True,
                frame=frame.pixels,
                evidence=[c.to_json() for c in checks],
                best=(int(at[0]), int(at[1]), int(at[2]), int(at[3]))
                if isinstance(at, list) and len(at) == 4
                else None,
                template=pictured.expected if pictured is not None else None,
            )
        pause = min(0.5, remaining)
        t = time.monotonic()
        if not ctx.backend.wait_for_update(pause):
            ctx.stop.wait(max(0.0, pause - (time.monotonic() - t)))  # pace a backend that never blocks (fixture:)


def _failed(c: Check, step: Step) -> str:
    if c.kind == FIELD_IDENTITY:
        return f"the text was read back in a field that is not the one the step means ({c.detail})"
    if c.kind == SCREEN_CHANGED:
        return (
            f"the screen did not change {'around ' + c.expected if c.expected != 'anywhere' else 'anywhere'} within "
            f"{step.timeout_s:g}s ({c.detail}); the step declares nothing else to verify it (add expect:)"
        )
    if c.kind == "template_present":  # its file's name tells an operator nothing: the report shows the picture
        after = f"after {step.intent!r}" if step.intent else "after it"
        return f"the screen does not show what it showed {after} in the recording ({c.detail})"
    return f"{c.kind} {c.expected!r} did not hold ({c.detail})"


def verification(checks: list[Check], effect: EffectVerdict | None) -> Verification:
    """How a verified step was verified: `strong` (a declared fact, an effect, the typed text read back),
    `weak` (only: the screen changed where it acted), `none` (a wait with nothing declared: it sent no input)."""
    if effect is not None or any(not c.evidence.get("weak") for c in checks):
        return "strong"
    return "weak" if checks else "none"


def _mask_secret(ctx: RunContext, step: Step, point: Point | None, target_box: Box | None) -> None:
    """From the dispatch of a step that types a secret on, every saved frame has the field it typed into painted
    over; with no point (typing into the focused field) the whole frame, until the typing shows where it went."""
    ctx.mask_secret(
        step.id, field_band(point, target_box, (ctx.checks.sx, ctx.checks.sy)) if point is not None else None
    )


def _narrow_secret_mask(ctx: RunContext, step: Step, before: np.ndarray, after: np.ndarray) -> None:
    """A secret typed with no point: mask where the typing changed the screen (padded) instead of the whole frame."""
    changed = changed_box(before, after)
    if changed is not None and before.shape == after.shape:
        x, y, w, h = changed
        pad = round(FIELD_HALF_HEIGHT * max(ctx.checks.sx, ctx.checks.sy))
        ctx.mask_secret(step.id, (x - pad, y - pad, w + 2 * pad, h + 2 * pad))


@dataclass
class _Where:
    """Where a GUI step acts, found on its settled frame before any input."""

    frame: Frame
    point: Point | None = None
    to_point: Point | None = None
    target_box: Box | None = None
    anchor: Anchor | None = None
    shift: Placement | None = (
        None  # the window's displacement the run's targets agree on: places facts no target places
    )


@dataclass
class _GuiStep:
    """One GUI step on its way through the lifecycle: what every phase reads, and whether input was sent."""

    ctx: RunContext
    index: int
    step: Step
    t0: float
    rec: StepRecord
    secret: bool
    dispatched: bool = False


def run_gui_step(ctx: RunContext, index: int, step: Step) -> StepRecord:
    """Run one GUI step through the whole lifecycle up to its verification; raise Halt when it cannot be sure.
    The caller (runtime/act/durable.py) records it verified."""
    run = _GuiStep(
        ctx, index, step, time.monotonic(), StepRecord(step.id), bool(step.text and ctx.interp.uses_secret(step.text))
    )
    calls.started(ctx, step, index, intent=step.intent)
    try:
        where = _locate(run)
        baseline = take_baseline(ctx, step, where.frame.pixels, where.point)
        check = _checks(ctx, step, where, run.rec.rung)
        dispatched_at = _dispatch(run, where, check, next_gui_step(ctx, index))
        try:
            run.rec.checks = _postconditions(ctx, step, check, dispatched_at + step.timeout_s)
        except Halt as h:
            if baseline is not None:  # the screen failed; the system of record may still say what happened
                read_after(ctx, step, baseline, dispatched_at, h)
            raise
        if baseline is not None:
            run.rec.effect = check_effect(ctx, step, baseline, dispatched_at)
    except Halt as h:
        h.step = h.step or step.id
        h.dispatched = h.dispatched or run.dispatched
        raise
    except BackendError as e:
        raise Halt("backend", f"step {step.id!r}: {e}", step=step.id, dispatched=run.dispatched) from None
    except FlowError as e:  # e.g. a verifier misconfigured at run time
        raise Halt("input", f"step {step.id!r}: {e}", step=step.id, dispatched=run.dispatched) from None
    return _verified(run, where.anchor)


def _locate(run: _GuiStep) -> _Where:
    """Settle, resolve the target (and the drag's end), pass the identity gate: where the step will act."""
    ctx, step, rt = run.ctx, run.step, run.ctx.config.runtime
    if step.target is not None:  # a hover left by whatever ran before must not change the target's look
        park_pointer(ctx, step.id, step.target)
    if ctx.backend.wait_for_update(0):  # the screen moved since our last look: let it settle
        frame = settle(ctx.backend, rt.settle_quiet_s, rt.settle_timeout_s).frame
    else:  # unchanged since the previous step's verified frame: already settled
        frame = ctx.backend.capture()
    where = _Where(frame)
    match_scale = None
    if step.target is not None:
        where.frame, res = _resolve_while_changing(ctx, step, frame, run.t0 + step.timeout_s)
        _guard_rung(step, res, where.frame)
        win = res.winning
        where.point = run.rec.point = res.point
        run.rec.rung, run.rec.score = res.rung, (win.score if win else None)
        where.target_box = win.box if win else None
        match_scale = win.scale if win else None
        where.anchor = ctx.focus = _anchor(ctx, step, where.point, match_scale)
        if where.anchor is not None:
            ctx.found.append(where.anchor)
    elif step.action in ("key", "hotkey"):
        where.anchor = ctx.focus  # keys act on the focused field: `relative_to: target` facts move with it
    where.shift = agreed_shift(ctx.found, (ctx.checks.sx, ctx.checks.sy))
    if step.to is not None:
        where.to_point = _resolve(ctx, step, step.to, where.frame, "to").point
    if where.point is not None:
        _identity_gate(ctx, step, where.point, where.frame, match_scale)
    return where


def _dispatch(run: _GuiStep, where: _Where, check: _Checks, after: Step | None) -> float:
    """Journal `action_dispatched` (fsync'd before any input), act, let the screen settle (the postconditions run on
    its frame while the last of the quiet time is waited out); when input was sent."""
    ctx, step, before = run.ctx, run.step, where.frame.pixels
    if not run.secret:
        ctx.frames.save(f"{run.index:03d}-{step.id}-before.png", before)
    if ctx.stop.is_set():
        raise StopRequested()
    dispatch = calls.dispatched(ctx, step, where.point)
    run.dispatched = True
    dispatched_at = time.monotonic()
    if run.secret:
        _mask_secret(ctx, step, where.point, where.target_box)
    _act(ctx, step, where.point, where.to_point, before, where.target_box)
    ctx.journal.append(RecordType.ACTION_SENT, step.id, {"dispatch_seq": dispatch["seq"]})
    park_after_input(ctx, run.index)
    rt = ctx.config.runtime

    def look(frame: Frame) -> None:
        check.look(frame)
        if after is not None:
            look_ahead(ctx, after, frame)

    settled = settle(
        ctx.backend, rt.settle_quiet_s, min(rt.settle_timeout_s, step.timeout_s), expect_change_s=REACT_S, look=look
    )
    if run.secret and where.point is None:
        _narrow_secret_mask(ctx, step, before, settled.frame.pixels)
    return dispatched_at


def _verified(run: _GuiStep, anchor: Anchor | None) -> StepRecord:
    """The step's record once verified: its time, its after frame, the data of its `step_verified`."""
    ctx, step, rec = run.ctx, run.step, run.rec
    rec.elapsed_ms = (time.monotonic() - run.t0) * 1000
    after = ctx.backend.capture().pixels
    if not run.secret:
        ctx.frames.save(f"{run.index:03d}-{step.id}-after.png", after)
    rec.data = {
        "index": run.index,
        "rung": rec.rung,
        "elapsed_ms": round(rec.elapsed_ms, 1),
        "verified_by": "runtime",
        "verification": verification(rec.checks, rec.effect),
        "effect": rec.effect.to_json() if rec.effect is not None else None,
        "screen_facts": screen_facts(ctx, step, anchor),
    }
    return rec


def screen_facts(ctx: RunContext, step: Step, anchor: Anchor | None = None) -> list[ScreenFact]:
    """The step's postconditions that can be re-proved on one frame (resume checks them before acting), texts
    interpolated, areas that move with the target placed where it was found this time."""
    return [
        _fact(ctx, ctx.checks.anchored(pc, anchor))
        for pc in step.expect
        if pc.region_changed is None and pc.blank is None
    ]


def _fact(ctx: RunContext, pc: Postcondition) -> ScreenFact:
    """One fact as its record keeps it: the keys it sets, in the model's order (a region_changed or blank fact is
    never one)."""
    fact: ScreenFact = {}
    if pc.text_present is not None:
        fact["text_present"] = ctx.interp(pc.text_present)
    if pc.text_absent is not None:
        fact["text_absent"] = ctx.interp(pc.text_absent)
    if pc.template_present is not None:
        fact["template_present"] = pc.template_present
    if pc.region is not None:
        fact["region"] = list(pc.region)
    if pc.relative_to is not None:
        fact["relative_to"] = pc.relative_to
    return fact
