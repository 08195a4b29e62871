"""The start state (spec §22): a run's first input goes only to the screen the recording started from.

Before the first step that can send input (a GUI step, a child run), while the journal holds no input yet (a
replay, and a resume of a run that sent none), the bundle's `start:` facts are judged on one settled frame
(`verify.start`) and journaled (`start_checked`). When they do not hold, the run halts before any input, category
`start_state`. `check_start_state` makes the same judgement outside a run: a batch asks it after a reset.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openadapt_flow.backends.base import Backend, Frame
from openadapt_flow.backends.factory import open_backend
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.config import DeployConfig, RuntimeConfig
from openadapt_flow.bundle.loader import LoadedBundle, load_bundle
from openadapt_flow.bundle.models import Postcondition, Step
from openadapt_flow.bundle.params import Interpolator, bind_params, placeholders
from openadapt_flow.errors import UsageError
from openadapt_flow.records.models import Check
from openadapt_flow.records.states import RecordType
from openadapt_flow.runtime.act.pointer import park_pointer
from openadapt_flow.runtime.act.settle import settle
from openadapt_flow.runtime.judge.halt import Halt
from openadapt_flow.runtime.start.backend_select import select_backend
from openadapt_flow.runtime.start.context import RunContext
from openadapt_flow.verify.screen import ScreenChecks
from openadapt_flow.verify.start import StartVerdict, judge_start
from openadapt_flow.vision.ocr import OcrEngine
from openadapt_flow.vision.template import TemplateImage

START_STATE = "start_state"  # the halt category
NOT_AT_START = "the app is not where the recording started: "


def settled_frame(backend: Backend, rt: RuntimeConfig) -> Frame:
    """The screen once it stopped changing (a restarted app may still be drawing)."""
    if backend.wait_for_update(0):
        return settle(backend, rt.settle_quiet_s, rt.settle_timeout_s).frame
    return backend.capture()


def check_start_in_run(ctx: RunContext, step: Step) -> None:
    """Before `step`, a run's first that can send input: judge the start facts; halt (nothing sent) if they fail."""
    facts = ctx.model.start
    if not facts or ctx.fold.input_sent:
        return
    park_pointer(ctx, step.id, step.target)  # a hover left by whatever ran before must not change what is judged
    frame = settled_frame(ctx.backend, ctx.config.runtime)
    verdict = judge_start(
        ctx.checks,
        facts,
        [ctx.interp(pc.text) if pc.text is not None else None for pc in facts],
        frame.pixels,
        anchor(ctx.model.steps),
    )
    ctx.journal.append(
        RecordType.START_CHECKED, None, {"ok": verdict.ok, "checks": [c.to_json() for c in verdict.checks]}
    )
    if not verdict.ok:
        raise Halt(
            START_STATE,
            NOT_AT_START + verdict.differs(),
            step=step.id,
            frame=frame.pixels,
            evidence=[c.to_json() for c in verdict.checks],
        )


def anchor(steps: list[Step]) -> tuple[str, tuple[int, int, int, int]] | None:
    """The first step's target as the start check's anchor (its template and recorded region): what the run acts on
    first is on the start screen, and finding it places a moved app."""
    first = next((s for s in steps if s.target is not None), None)
    t = first.target if first is not None else None
    if t is None or t.template is None or t.region is None:
        return None
    return t.template, t.region


@dataclass
class StartResult:
    """Whether the app shows the bundle's start state; `reason`: what differs (empty when it does)."""

    ok: bool
    reason: str = ""
    checks: list[Check] = field(default_factory=list)
    unjudged: list[str] = field(default_factory=list)  # facts naming a param, judged by each run with its own values


def as_loaded(bundle: Path | str | LoadedBundle) -> LoadedBundle:
    return bundle if isinstance(bundle, LoadedBundle) else load_bundle(bundle)


def open_desktop(backend: BackendSpec | Backend | None, config: DeployConfig) -> tuple[Backend, bool]:
    """The backend to look with, and whether we opened it (and so close it): a spec (None: the config's)."""
    if backend is not None and not isinstance(backend, BackendSpec):
        return backend, False
    spec = backend if backend is not None else select_backend(config.backend)
    if spec is None:
        raise UsageError("no backend: give a BackendSpec or a config backend: section")
    return open_backend(spec), True


def judge_now(
    loaded: LoadedBundle,
    desk: Backend,
    config: DeployConfig,
    params: Mapping[str, Any] | None,
    ocr: OcrEngine | None = None,
    facts: list[Postcondition] | None = None,
) -> tuple[StartVerdict, list[str]]:
    """The start facts (or `facts`) judged on one settled frame of `desk`; facts naming a param are judged only with
    `params` (a batch resets between items, with none); the second value lists those left unjudged."""
    facts = list(loaded.model.start) if facts is None else facts
    interp = Interpolator(bind_params(loaded.model, params)) if params is not None else None
    judged: list[Postcondition] = []
    texts: list[str | None] = []
    unjudged: list[str] = []
    for pc in facts:
        if pc.text is not None and any(placeholders(pc.text)) and interp is None:
            unjudged.append(f"{pc.kind} {pc.text!r}")
            continue
        judged.append(pc)
        if pc.text is None:
            texts.append(None)
        else:  # with no params, only the doubled braces of a literal are undone, as the interpolator does
            texts.append(interp(pc.text) if interp is not None else pc.text.replace("{{", "{").replace("}}", "}"))
    frame = settled_frame(desk, config.runtime)
    screen = loaded.model.screen
    first = anchor(list(loaded.model.steps))
    used = {pc.template_present for pc in judged if pc.template_present is not None} | ({first[0]} if first else set())
    checks = ScreenChecks(
        ocr or OcrEngine(),
        {p: TemplateImage(loaded.templates[p]).prepare() for p in used},
        (frame.width / screen.width, frame.height / screen.height),
    )
    return judge_start(checks, judged, texts, frame.pixels, first), unjudged


def check_start_state(
    bundle: Path | str | LoadedBundle,
    backend: BackendSpec | Backend | None,
    config: DeployConfig,
    params: Mapping[str, Any] | None = None,
    ocr: OcrEngine | None = None,
) -> StartResult:
    """Does the app show the bundle's start state now (one settled frame)? A bundle with no `start:` always does."""
    loaded = as_loaded(bundle)
    if not loaded.model.start:
        return StartResult(True)
    desk, opened = open_desktop(backend, config)
    try:
        verdict, unjudged = judge_now(loaded, desk, config, params, ocr)
    finally:
        if opened:
            desk.close()
    return StartResult(verdict.ok, "" if verdict.ok else NOT_AT_START + verdict.differs(), verdict.checks, unjudged)
