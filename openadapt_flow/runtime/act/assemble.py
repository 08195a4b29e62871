"""Run assembly: a bundle run's checked input, its desktop, its run directory (or rows), lease and first journal
record, and the context its steps run in — then the engine's step loop (act/engine.py) drives it. Also what every
kind of run is assembled from: the ladder, the context of a bundle's or a workflow's run, the no-desktop backend,
the signal handlers that stop a run at its next safe boundary."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from openadapt_flow.backends.base import Backend, Capabilities, Frame
from openadapt_flow.backends.factory import open_backend
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.bundle.loader import LoadedBundle, load_bundle
from openadapt_flow.bundle.models import Screen
from openadapt_flow.bundle.params import BoundParams, Interpolator, bind_params
from openadapt_flow.errors import ParamError, UsageError
from openadapt_flow.ladder.ladder import Ladder, LadderOptions
from openadapt_flow.ladder.model_rung import ModelClient
from openadapt_flow.records.entry import JournalEntry
from openadapt_flow.records.rundoc import ManifestBody
from openadapt_flow.runtime.act.engine import execute
from openadapt_flow.runtime.judge.fold import RunProgress
from openadapt_flow.runtime.start.context import Progress, RunContext
from openadapt_flow.runtime.start.fenced import FencedBackend
from openadapt_flow.runtime.start.launch import BackendFactory, ReplayRequest, Reporter, RunOutcome, Runs
from openadapt_flow.runtime.start.lifecycle import begin_run, check_queued
from openadapt_flow.runtime.start.preflight import check_settings, probe_effects
from openadapt_flow.runtime.start.runref import store_for
from openadapt_flow.store.atomic import StorageFault
from openadapt_flow.store.base import JournalWriter, RunHandle, RunLease
from openadapt_flow.store.faults import crash_point
from openadapt_flow.store.keys import load_decision_key, load_key
from openadapt_flow.verify.screen import ScreenChecks
from openadapt_flow.version import __version__
from openadapt_flow.vision.engines import engine_versions
from openadapt_flow.vision.ocr import OcrEngine

NO_SCREEN = Screen(width=1, height=1)  # a workflow run's context has no bundle screen to scale from
NO_BACKEND = "no backend: give --url vnc://host[:port], --backend screen, --rdp-host HOST, or a config backend: section"


class NoDesktop:
    """The backend of a run whose steps are all durable kinds (tools, questions, timers): no screen at all."""

    name = "none"
    capabilities = Capabilities()

    def capture(self) -> Frame:
        return Frame(np.zeros((1, 1, 3), np.uint8))

    def wait_for_update(self, timeout: float) -> bool:
        return False

    def _no(self, *args: Any, **kw: Any) -> None:
        raise UsageError("this run has no desktop backend")

    click = move = type_text = press = scroll = drag = _no

    def close(self) -> None:
        pass


def open_or_none(spec: BackendSpec | None, factory: Callable[[BackendSpec], Backend]) -> Backend:
    return NoDesktop() if spec is None else factory(spec)


@contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[None]:
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


def build_ladder(loaded: LoadedBundle | None, config: DeployConfig, allow_model: bool, ocr: OcrEngine) -> Ladder:
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
    screen = loaded.model.screen if loaded is not None else NO_SCREEN
    return Ladder(
        loaded.templates if loaded is not None else {},
        (screen.width, screen.height),
        ocr=ocr,
        model=model,
        options=options,
    )


def _manifest(
    run_id: str, req: ReplayRequest, loaded: LoadedBundle, params: BoundParams, durable: bool
) -> ManifestBody:
    return {
        "run_id": run_id,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "tool_version": __version__,
        "host": socket.gethostname(),
        "bundle": {
            "path": str(loaded.root.resolve()),
            "name": loaded.model.name,
            "digest": loaded.digest,
            "files": list(loaded.files),
        },
        "params": params.public(),
        "backend": req.backend.to_json() if req.backend else None,
        "step_ids": [s.id for s in loaded.model.steps],
        "durable": durable,
        "allow_model": req.allow_model,
        "config": req.config.model_dump(mode="json", by_alias=True),
        "parent_run": str(req.parent_run) if req.parent_run else None,
        "child_runs": [],
        "engines": engine_versions(),
    }


def prepare(req: ReplayRequest) -> tuple[LoadedBundle, BoundParams, bool]:
    """Everything that can fail on bad input, before a run directory or a connection exists."""
    loaded = req.loaded if req.loaded is not None else load_bundle(req.bundle)
    params: BoundParams | None = None
    unbound: ParamError | None = None
    try:
        params = bind_params(loaded.model, req.params, from_flag=req.param_flags)
    except ParamError as e:  # named with every other missing setting: all at once, not one per try
        unbound = e
    check_settings(loaded, req.config, params, req.allow_model, unbound)
    assert params is not None  # check_settings raised otherwise
    if req.run_dir is not None and not req.submitted:
        store_for(req.config, req.run_dir).check_new(str(req.run_dir))
    if req.backend is None and any(not s.is_durable_kind for s in loaded.model.steps):
        raise UsageError(NO_BACKEND)
    durable = req.durable or req.config.runtime.durable or loaded.model.needs_durable
    return loaded, params, durable


@dataclass(frozen=True)
class RunInputs:
    """What a run replays: its bundle (None: a workflow, whose calls add its steps), its bound parameters, and the
    digest its manifest pins (None: the bundle's own)."""

    loaded: LoadedBundle | None
    params: BoundParams
    digest: str | None = None


@dataclass(frozen=True)
class RunSetup:
    """How a run is driven: its deployment config, who starts its child runs, whether the model rung may be used and
    the run is durable, who hears of its progress and renders its report, and an OCR engine to reuse (a fleet
    worker's, loaded once; None: a new one)."""

    config: DeployConfig
    runs: Runs
    allow_model: bool = False
    durable: bool = True
    progress: Progress | None = None
    reporter: Reporter | None = None
    ocr: OcrEngine | None = None
    fence: Callable[[], None] | None = None  # checked before every input besides the lease (ReplayRequest.fence)


def make_context(
    run: RunHandle, run_id: str, journal: JournalWriter, backend: Backend, inputs: RunInputs, setup: RunSetup
) -> RunContext:
    """The context of a bundle run, or of a workflow run (`inputs.loaded` None: no bundle)."""
    loaded, config = inputs.loaded, setup.config
    ocr = setup.ocr if setup.ocr is not None else OcrEngine()
    ladder = build_ladder(loaded, config, setup.allow_model, ocr)
    screen = loaded.model.screen if loaded is not None else NO_SCREEN
    first = backend.capture()
    scale = (first.width / screen.width, first.height / screen.height)
    fold = RunProgress()
    ctx = RunContext(
        run_id=run_id,
        bundle=loaded,
        params=inputs.params,
        interp=Interpolator(inputs.params, run_id, fold.results),
        backend=backend,
        ladder=ladder,
        checks=ScreenChecks(ocr, ladder.templates, scale),
        journal=journal,
        run=run,
        frames=run.frame_writer(),
        config=config,
        progress=setup.progress or Progress(),
        reporter=setup.reporter,
        durable=setup.durable,
        fold=fold,
        runs=setup.runs,
        steps={s.id: s for s in loaded.model.steps} if loaded is not None else {},
        digest=inputs.digest if inputs.digest is not None else loaded.digest if loaded is not None else "",
        desk_fence=setup.fence,
    )
    ctx.backend = FencedBackend(backend, ctx.guard_input)  # the one place a run's input is fenced
    return ctx


@dataclass
class _Start:
    """A bundle run being started: its checked input, the desktop (a submitted run's connecting on a thread), and
    what the end of the run lets go of."""

    req: ReplayRequest
    loaded: LoadedBundle
    params: BoundParams
    durable: bool
    pool: ThreadPoolExecutor | None = None
    connecting: Future[Backend] | None = None
    backend: Backend | None = None
    lease: RunLease | None = None
    ctx: RunContext | None = None


def start_bundle(
    req: ReplayRequest,
    runs: Runs,
    progress: Progress | None = None,
    reporter: Reporter | None = None,
    backend_factory: BackendFactory = open_backend,
) -> RunOutcome:
    """Run a bundle once. Bad input raises (exit 2, no run dir); everything after is a RunOutcome.

    `reporter` renders the report at every stop (the report layer sits above the runtime); `runs` starts or continues
    the child runs of its `flow` steps. A submitted run (spec §19) exists already: its desktop is connected to on a
    thread while the run is opened and its lease taken, not after; an error of either surfaces before `run_started`.
    """
    loaded, params, durable = prepare(req)
    key = load_key(create=True)
    if durable:
        load_decision_key(create=True)  # the first run that may pause creates it; approve/resume never do
    st = _Start(req, loaded, params, durable)
    if req.submitted:
        st.pool = ThreadPoolExecutor(1, thread_name_prefix="connect")
        st.connecting = st.pool.submit(open_or_none, req.backend, backend_factory)
    else:  # connect errors surface here, before any run dir exists
        st.backend = open_or_none(req.backend, backend_factory)
    try:
        run, run_id, journal, started = _open_run(st, key)
        assert st.backend is not None
        ctx = st.ctx = make_context(
            run,
            run_id,
            journal,
            st.backend,
            RunInputs(loaded, params),
            RunSetup(req.config, runs, req.allow_model, durable, progress, reporter, req.ocr, req.fence),
        )
        ctx.lease = st.lease
        ctx.pointer_parked, ctx.park_after = req.parked, req.park_after
        ctx.watch([started])
        for step_id, box in req.masks.items():  # journaled in the child too, so its own resumes mask as well
            ctx.mask_secret(f"parent:{step_id}", box)
        with stop_on_signals(ctx.stop):
            return execute(ctx, 0)
    finally:
        _let_go(st)


def _open_run(st: _Start, key: bytes) -> tuple[RunHandle, str, JournalWriter, JournalEntry]:
    """Create (or, submitted, open) the run, take its lease, copy the bundle and write `run_started`: the run, its
    id, its journal and that first record."""
    req, loaded, params = st.req, st.loaded, st.params
    store = store_for(req.config, req.run_dir)
    submitted = store.open_run(str(req.run_dir)) if req.submitted else None
    recorded = submitted.manifest() if submitted is not None else None  # keeps the run_id it was submitted with
    run_id = recorded["run_id"] if recorded is not None else f"run-{uuid.uuid4().hex[:12]}"
    if st.backend is not None:  # after the backend opened (a fixture creates its system of record), before the run dir
        probe_effects(loaded, req.config, params, run_id)
    run = submitted or store.create_run(None if req.run_dir is None else str(req.run_dir))
    crash_point("start:dir_created")
    try:
        st.lease = lease = run.lease(req.config.runtime.lease_ttl_s).acquire()  # every run has one owner
        lease.start_heartbeat()
        if recorded is not None:
            check_queued(run)  # under the lease: a run already started is never started twice
        crash_point("start:lease_acquired")
        if st.connecting is not None:
            st.backend = st.connecting.result()
            probe_effects(loaded, req.config, params, run_id)
        if recorded is None or recorded["bundle"]["digest"] != loaded.digest:  # a submitted run holds these bytes
            run.snapshot_bundle(loaded.root, loaded.files, like=req.snapshot_like)
        crash_point("start:bundle_copied")
        journal, started = begin_run(
            run,
            key,
            _manifest(run_id, req, loaded, params, st.durable),
            {"steps": len(loaded.model.steps), "durable": st.durable, "lease_generation": lease.generation},
        )
    except StorageFault as f:  # before manifest.json there is no run to resume: say so
        f.message = f"the run could not start ({f.detail}); nothing was sent — replay again once the fault is gone"
        raise
    return run, run_id, journal, started


def _let_go(st: _Start) -> None:
    """The end of a start, however it ended: frames flushed, lease released, desktop closed."""
    if st.ctx is not None:
        st.ctx.frames.close()  # never exit with the frame writer mid-encode (a C++ abort at interpreter shutdown)
    if st.lease is not None:
        st.lease.release()
    if st.backend is None and st.connecting is not None and st.connecting.exception() is None:
        st.backend = st.connecting.result()  # stopped before it was used: still closed
    if st.backend is not None:
        st.backend.close()
    if st.pool is not None:
        st.pool.shutdown()
