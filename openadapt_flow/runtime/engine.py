"""The engine loop: build a run, execute its steps, stop with a state and an exit code."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openadapt_flow import __version__
from openadapt_flow.backends.base import Backend
from openadapt_flow.backends.spec import BackendSpec, open_backend
from openadapt_flow.bundle.loader import LoadedBundle, load_bundle
from openadapt_flow.bundle.params import BoundParams, Interpolator, bind_params
from openadapt_flow.errors import FlowError, UsageError
from openadapt_flow.ladder.ladder import Ladder, LadderOptions
from openadapt_flow.ladder.model_rung import ModelClient
from openadapt_flow.runtime.config import DeployConfig
from openadapt_flow.runtime.context import Progress, RunContext
from openadapt_flow.runtime.outcome import classify
from openadapt_flow.runtime.halt import Halt, StopRequested
from openadapt_flow.runtime.states import EXIT_CODES
from openadapt_flow.runtime.step import run_gui_step
from openadapt_flow.store.journal import Journal, load_journal
from openadapt_flow.store.keys import load_key
from openadapt_flow.store.rundir import FrameWriter, RunDir, check_new_run_dir, new_run_dir
from openadapt_flow.vision.annotate import annotate
from openadapt_flow.vision.ocr import OcrEngine
from openadapt_flow.verify.screen import ScreenChecks


@dataclass
class RunOutcome:
    state: str
    exit_code: int
    run_dir: Path
    message: str = ""
    category: str | None = None


@dataclass
class ReplayRequest:
    bundle: Path
    params: Mapping[str, Any]
    backend: BackendSpec
    config: DeployConfig
    run_dir: Path | None = None
    durable: bool = False
    allow_model: bool = False
    param_flags: frozenset[str] = frozenset()


@contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGTERM/SIGINT set `stop`; the engine stops at the next safe boundary."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}

    def handler(signum: int, _frame: Any) -> None:
        stop.set()

    for s in old:
        signal.signal(s, handler)
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _build_ladder(loaded: LoadedBundle, config: DeployConfig, allow_model: bool, ocr: OcrEngine) -> Ladder:
    mc = config.ladder.model
    use_model = allow_model or mc.enabled
    model = None
    if use_model:
        api_key = os.environ.get(mc.api_key_env) if mc.api_key_env else None
        model = ModelClient(mc.url, mc.model, api_key=api_key, timeout_s=mc.timeout_s)
    options = LadderOptions(
        allow_model=use_model,
        model_for_consequential=mc.allow_consequential and not config.policy.forbid_model_for_consequential,
    )
    screen = loaded.model.screen
    return Ladder(loaded.templates, (screen.width, screen.height), ocr=ocr, model=model, options=options)


def _manifest(run_id: str, req: ReplayRequest, loaded: LoadedBundle, params: BoundParams, durable: bool) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "tool_version": __version__,
        "host": socket.gethostname(),
        "bundle": {"path": str(loaded.root.resolve()), "name": loaded.model.name, "digest": loaded.digest, "files": list(loaded.files)},
        "params": params.public(),
        "backend": req.backend.to_json(),
        "step_ids": [s.id for s in loaded.model.steps],
        "durable": durable,
        "allow_model": req.allow_model,
        "config": req.config.model_dump(mode="json", by_alias=True),
        "parent_run": None,
        "child_runs": [],
    }


def prepare(req: ReplayRequest) -> tuple[LoadedBundle, BoundParams]:
    """Everything that can fail on bad input, before a run directory or a connection exists."""
    loaded = load_bundle(req.bundle)
    params = bind_params(loaded.model, req.params, from_flag=req.param_flags)
    durable = req.durable or req.config.runtime.durable or loaded.model.needs_durable
    if req.run_dir is not None:
        check_new_run_dir(req.run_dir)
    if durable:
        raise UsageError("the durable runtime (--durable, runtime.durable, or durable step kinds) is not available in this version")
    return loaded, params


Reporter = Callable[[RunDir], Any]


def replay(
    req: ReplayRequest,
    progress: Progress | None = None,
    reporter: Reporter | None = None,
    backend_factory: Callable[[BackendSpec], Backend] = open_backend,
) -> RunOutcome:
    """Run a bundle once. Bad input raises (exit 2, no run dir); everything after is a RunOutcome.

    `reporter` renders the report at every stop (the report layer sits above the runtime).
    """
    loaded, params = prepare(req)
    ocr = OcrEngine()
    ladder = _build_ladder(loaded, req.config, req.allow_model, ocr)
    key = load_key(create=True)
    backend = backend_factory(req.backend)  # connect errors surface here, before any run dir exists
    try:
        run_path = new_run_dir(Path(req.config.runtime.runs_root), req.run_dir)
        run = RunDir(run_path)
        run_id = f"run-{uuid.uuid4().hex[:12]}"
        run.snapshot_bundle(loaded.root, loaded.files)
        run.write_json("manifest.json", "manifest@1", _manifest(run_id, req, loaded, params, durable=False))
        journal = Journal(run.journal_path, key)
        frames = FrameWriter(run.frames_dir)
        screen = loaded.model.screen
        first = backend.capture()
        scale = (first.width / screen.width, first.height / screen.height)
        ctx = RunContext(
            run_id=run_id,
            bundle=loaded,
            params=params,
            interp=Interpolator(params, run_id),
            backend=backend,
            ladder=ladder,
            checks=ScreenChecks(ocr, ladder.templates, scale),
            journal=journal,
            run=run,
            frames=frames,
            config=req.config,
            progress=progress or Progress(),
            reporter=reporter,
        )
        with _stop_on_signals(ctx.stop):
            return _execute(ctx)
    finally:
        backend.close()


def _execute(ctx: RunContext) -> RunOutcome:
    run, journal = ctx.run, ctx.journal
    steps = ctx.bundle.model.steps
    run.write_state("RUNNING")
    journal.append("run_started", None, {"steps": len(steps), "frame_size": None})
    state, message, category = "COMPLETED", "", None
    try:
        for i, step in enumerate(steps):
            if ctx.stop.is_set():
                raise StopRequested()
            ctx.progress.step_started(i, len(steps), step.id, step.intent)
            rec = run_gui_step(ctx, i, step)
            ctx.progress.step_finished(i, len(steps), step.id, {"ok": True, "rung": rec.rung, "score": rec.score, "ms": rec.elapsed_ms})
    except StopRequested:
        state, message = "INTERRUPTED", "stopped by signal at a step boundary; no input was pending"
        journal.append("interrupted", None, {"message": message})
    except Halt as h:
        state, message, category = "FAILED", h.message, h.category
        frame_ref = _save_halt_frame(ctx, h)
        journal.append(
            "halted",
            h.step,
            {"category": h.category, "message": h.message, "input_sent": h.dispatched, "evidence": h.evidence, "frame": frame_ref},
        )
        ctx.progress.step_finished(-1, len(steps), h.step or "", {"ok": False, "category": h.category, "message": h.message})
    except FlowError as e:
        state, message, category = "FAILED", str(e), "backend"
        journal.append("halted", None, {"category": category, "message": message})
    ctx.frames.close()
    outcome = evidence = None
    if state != "COMPLETED":
        outcome, evidence = classify(ctx.bundle.model, load_journal(run.journal_path, ctx.journal.key).records)
    journal.append("run_finished", None, {"state": state, "transaction_outcome": outcome, "outcome_evidence": evidence, "frame_errors": ctx.frames.errors})
    journal.close()
    run.write_state(state, transaction_outcome=outcome, halt_category=category, message=message or None)
    if ctx.reporter is not None:
        ctx.reporter(run)
    return RunOutcome(state, EXIT_CODES[state], run.path, message, category)


def _save_halt_frame(ctx: RunContext, h: Halt) -> str | None:
    if h.frame is None:
        try:
            h.frame = ctx.backend.capture().pixels
        except FlowError:
            return None
    img = annotate(h.frame, search=h.search, best=h.best, point=h.point, label=f"{h.category}: {h.step or ''}")
    return ctx.frames.save_now(f"halt-{h.step or 'run'}.png", img)
