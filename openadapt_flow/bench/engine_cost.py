"""What the engine itself costs per step: overhead beside the app's own time, journal fsyncs, checkpoints, resume.

Overhead is measured on real replays of the demo bundle over loopback VNC,
in-process, with the backend wrapped so the time spent waiting for the
screen (settling, the app reacting) is summed per step; overhead = the step's
wall time minus that wait. Nothing in the runtime is changed for this: the
wrapper is passed as the engine's `backend_factory`, and OCR and journal time
are read by timing those calls while the bench runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openadapt_flow.backends.base import Backend, Frame
from openadapt_flow.backends.factory import open_backend
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bench.frames import BUNDLE_DIR, demo_on_xvnc
from openadapt_flow.bench.stats import Cell
from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.procs import stop_process
from openadapt_flow.records.entry import JournalEntry
from openadapt_flow.records.states import RecordType, is_a
from openadapt_flow.runtime.start.context import Progress, StepSummary
from openadapt_flow.store import Journal
from openadapt_flow.vision.ocr import OcrEngine

PARAMS = {"vendor": "ACME", "amount": "12.50"}
JOURNAL_PER_STEP = (
    RecordType.STEP_STARTED,
    RecordType.RESOLVED,
    RecordType.ACTION_DISPATCHED,
    RecordType.ACTION_SENT,
    RecordType.POSTCONDITIONS,
    RecordType.STEP_VERIFIED,
)


class TimedBackend:
    """A backend that adds up where its time goes: waiting for the screen, capturing, sending input."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.name, self.capabilities = inner.name, inner.capabilities
        self.wait_s = self.capture_s = self.input_s = 0.0

    def _time(self, attr: str, fn: Callable[[], Any]) -> Any:
        t0 = time.perf_counter()
        try:
            return fn()
        finally:
            setattr(self, attr, getattr(self, attr) + time.perf_counter() - t0)

    def capture(self) -> Frame:
        return self._time("capture_s", self.inner.capture)

    def wait_for_update(self, timeout: float) -> bool:
        return self._time("wait_s", lambda: self.inner.wait_for_update(timeout))

    def click(self, x: int, y: int, button: str = "left", count: int = 1) -> None:
        self._time("input_s", lambda: self.inner.click(x, y, button, count))

    def move(self, x: int, y: int) -> None:
        self._time("input_s", lambda: self.inner.move(x, y))

    def type_text(self, text: str) -> None:
        self._time("input_s", lambda: self.inner.type_text(text))

    def press(self, keys: list[str]) -> None:
        self._time("input_s", lambda: self.inner.press(keys))

    def scroll(self, x: int, y: int, clicks: int) -> None:
        self._time("input_s", lambda: self.inner.scroll(x, y, clicks))

    def drag(self, x1: int, y1: int, x2: int, y2: int) -> None:
        self._time("input_s", lambda: self.inner.drag(x1, y1, x2, y2))

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> Any:  # anything else the runtime may ask of a backend
        return getattr(self.inner, name)


@dataclass
class Meter:
    """Seconds spent inside wrapped callables while it is installed."""

    totals: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def wrap(self, owner: Any, attr: str, label: str) -> Iterator[None]:
        original = getattr(owner, attr)

        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.totals[label] = self.totals.get(label, 0.0) + time.perf_counter() - t0

        setattr(owner, attr, timed)
        try:
            yield
        finally:
            setattr(owner, attr, original)

    def snapshot(self) -> dict[str, float]:
        return dict(self.totals)


class StepClock(Progress):
    """Per-step wall time and the backend/meter counters consumed during it."""

    def __init__(self, backend: Callable[[], TimedBackend | None], meter: Meter) -> None:
        self.backend, self.meter = backend, meter
        self.steps: list[dict[str, float]] = []
        self._start: dict[str, float] = {}

    def _counters(self) -> dict[str, float]:
        b = self.backend()
        base = {"wait": b.wait_s, "capture": b.capture_s, "input": b.input_s} if b else {}
        return {"t": time.perf_counter(), **base, **self.meter.snapshot()}

    def step_started(self, index: int, total: int, step_id: str, intent: str | None) -> None:
        self._start = self._counters()

    def step_finished(self, index: int, total: int, step_id: str, summary: StepSummary) -> None:
        if not summary.get("ok") or not self._start:
            return
        end = self._counters()
        d = {k: (end.get(k, 0.0) - self._start.get(k, 0.0)) * 1000 for k in end}
        d["wall"] = d.pop("t")
        d["overhead"] = d["wall"] - d.get("wait", 0.0)
        self.steps.append(d)


@contextmanager
def _replaced(owner: Any, attr: str, value: Any) -> Iterator[None]:
    original = getattr(owner, attr)
    setattr(owner, attr, value)
    try:
        yield
    finally:
        setattr(owner, attr, original)


# What a `flow` process imports for the bench's commands: compiled once before any of them is timed.
WARM_IMPORTS = (
    "openadapt_flow.cli.replay",
    "openadapt_flow.cli.durable",
    "openadapt_flow.cli.fixture",
    "openadapt_flow.backends.vnc",
    "openadapt_flow.backends.fixture",
    "openadapt_flow.fixture.server",
)
ENV_KEYS = (
    "FLOW_KEY_FILE",
    "FLOW_DECISION_KEY_FILE",
    "DEMO_DB_DSN",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONPYCACHEPREFIX",
    "PYTHONPATH",
)
# The checkout this bench runs from: the processes it starts import the same code (not another install's).
SOURCE_ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def bench_env(work: Path) -> Iterator[dict[str, str]]:
    """A journal key of the bench's own (never the user's) while measuring, and this checkout first on PYTHONPATH;
    the variables put back after.

    The processes it starts run from compiled bytecode, as an installed package does: cached under the scratch
    folder (never beside the sources), compiled by one untimed process first. A shell with
    PYTHONDONTWRITEBYTECODE set would otherwise have every timed start compile the package from source.
    """
    saved = {k: os.environ.get(k) for k in ENV_KEYS}
    os.environ["FLOW_KEY_FILE"] = str(work / "install.key")
    os.environ["FLOW_DECISION_KEY_FILE"] = str(work / "decision.key")
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    cache = work / "pycache"
    os.environ["PYTHONPYCACHEPREFIX"] = str(cache)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(SOURCE_ROOT), saved["PYTHONPATH"]) if p)
    try:
        if not cache.is_dir():
            subprocess.run(
                [sys.executable, "-c", "import " + ", ".join(WARM_IMPORTS)],
                env=dict(os.environ),
                check=False,
                timeout=300,
                stdout=subprocess.DEVNULL,
            )
        yield dict(os.environ)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def engine_overhead(work: Path, runs: int, make_ocr: Callable[[], OcrEngine] = OcrEngine) -> dict[str, Any]:
    """Replay the demo bundle `runs` times in-process over loopback VNC; per-step overhead from all but the first run.

    `make_ocr` stands in for the engine's `OcrEngine()` (to measure another OCR set-up the same way).
    """
    from openadapt_flow.runtime.act import assemble as engine_mod
    from openadapt_flow.runtime.runs import replay
    from openadapt_flow.runtime.start.launch import ReplayRequest

    meter = Meter()
    holder: dict[str, TimedBackend] = {}

    def factory(spec: BackendSpec) -> Backend:
        holder["b"] = TimedBackend(open_backend(spec))
        return holder["b"]  # type: ignore[return-value]

    clock = StepClock(lambda: holder.get("b"), meter)
    states = []
    with demo_on_xvnc(1024, 768, "normal") as desk, bench_env(work):
        os.environ["DEMO_DB_DSN"] = f"sqlite:///{desk.db}"
        config = DeployConfig.model_validate(
            {"schema": "openadapt-flow/config@1", "runtime": {"runs_root": str(work / "runs")}}
        )
        with (
            meter.wrap(OcrEngine, "_read_crop", "ocr"),
            meter.wrap(Journal, "append", "journal"),
            _replaced(engine_mod, "OcrEngine", make_ocr),
        ):
            for i in range(runs):
                if i == 1:
                    clock.steps.clear()  # the first run pays imports and first-use set-up
                req = ReplayRequest(
                    bundle=BUNDLE_DIR,
                    params=PARAMS,
                    backend=BackendSpec(kind="vnc", host="127.0.0.1", port=desk.xvnc.port),
                    config=config,
                    run_dir=work / f"engine-run-{i}",
                )
                states.append(replay(req, progress=clock, backend_factory=factory).state)
    cells = {k: Cell() for k in ("overhead", "wall", "wait", "ocr", "journal", "capture", "input")}
    for s in clock.steps:
        for k, cell in cells.items():
            cell.ms.append(s.get(k, 0.0))
    return {
        "runs": runs,
        "states": states,
        "steps_measured": len(clock.steps),
        **{k: c.to_json() for k, c in cells.items()},
    }


def journal_and_checkpoint(work: Path, steps: int) -> dict[str, Any]:
    """Append a healthy step's journal records (two of them fsync'd), then write the checkpoint; per step."""
    run = work / "journal-bench"
    run.mkdir(parents=True, exist_ok=True)
    journal = Journal(run / "journal.jsonl", b"k" * 32)
    have_checkpoint = True
    try:
        from openadapt_flow.records.checkpoint import checkpoint_from_records
        from openadapt_flow.store.checkpoint import write_checkpoint
    except ImportError:
        have_checkpoint = False
    j, cp_cell = Cell(), Cell()
    verified: list[JournalEntry] = []
    payload = {
        "evidence": [{"rung": "template", "verdict": "hit", "elapsed_ms": 1.2, "score": 0.99}],
        "point": [100, 200],
    }
    try:
        for i in range(steps):
            t0 = time.perf_counter()
            for kind in JOURNAL_PER_STEP:
                data = {"index": i, "verified_by": "runtime"} if kind == RecordType.STEP_VERIFIED else payload
                rec = journal.append(kind, f"s{i}", data)
            j.ms.append((time.perf_counter() - t0) * 1000)
            verified.append(rec)
            if have_checkpoint:
                t0 = time.perf_counter()
                cp = checkpoint_from_records(verified)
                assert cp is not None
                write_checkpoint(run, cp)
                cp_cell.ms.append((time.perf_counter() - t0) * 1000)
    finally:
        journal.close()
    out: dict[str, Any] = {
        "journal": j.to_json(),
        "records_per_step": len(JOURNAL_PER_STEP),
        "fsyncs_per_step": 2,
        "filesystem": _fs_type(run),
    }
    out["checkpoint"] = cp_cell.to_json() if have_checkpoint else None
    return out


def _fs_type(path: Path) -> str:
    best, kind = "", "?"
    try:
        for line in Path("/proc/mounts").read_text().splitlines():
            parts = line.split()
            if len(parts) > 2 and str(path.resolve()).startswith(parts[1]) and len(parts[1]) > len(best):
                best, kind = parts[1], parts[2]
    except OSError:
        pass
    return kind


def _flow(*args: str) -> list[str]:
    return [sys.executable, "-m", "openadapt_flow", *args]


def _journal(path: Path) -> list[dict[str, Any]]:
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return []
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def resume_to_first_action(work: Path, timeout: float = 90) -> dict[str, Any]:
    """Interrupt a durable replay after two verified steps, then time `flow resume` to its first action_dispatched."""
    params = [a for k, v in PARAMS.items() for a in ("--param", f"{k}={v}")]
    run_dir = work / "resume-run"
    with demo_on_xvnc(1024, 768, "normal") as desk, bench_env(work) as env:
        env["DEMO_DB_DSN"] = f"sqlite:///{desk.db}"
        url = desk.url
        first = subprocess.Popen(
            _flow("replay", str(BUNDLE_DIR), "--durable", "--url", url, "--run-dir", str(run_dir), "--json", *params),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            _wait(
                lambda: (
                    sum(is_a(r, RecordType.STEP_VERIFIED) for r in _journal(run_dir / "journal.jsonl")) >= 2
                    or first.poll() is not None
                ),
                timeout,
                "two verified steps",
            )
            if first.poll() is not None:
                early = first.stderr.read().decode(errors="replace") if first.stderr else ""
                return {"error": f"durable replay ended early (exit {first.returncode}): {early[-300:]}"}
            first.send_signal(signal.SIGTERM)
            first.wait(timeout=30)
        finally:
            stop_process(first)
        seen = max((r["seq"] for r in _journal(run_dir / "journal.jsonl")), default=0)
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            _flow("resume", str(run_dir), "--url", url, "--json"),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            acted = _wait(
                lambda: (
                    any(
                        is_a(r, RecordType.ACTION_DISPATCHED) and r["seq"] > seen
                        for r in _journal(run_dir / "journal.jsonl")
                    )
                    or proc.poll() is not None
                ),
                timeout,
                "the resumed run's first action",
                interval=0.005,
            )
            elapsed = time.perf_counter() - t0
            out, err = proc.communicate(timeout=timeout)
        finally:
            stop_process(proc)
        dispatched = any(
            is_a(r, RecordType.ACTION_DISPATCHED) and r["seq"] > seen for r in _journal(run_dir / "journal.jsonl")
        )
        if not (acted and dispatched):
            return {"error": f"resume sent no action (exit {proc.returncode}): {err.decode()[-300:]}"}
        state = json.loads(out.decode() or "{}").get("state")
        return {"seconds": round(elapsed, 3), "interrupted_exit": first.returncode, "resume_state": state}


def _wait(cond: Callable[[], bool], timeout: float, what: str, interval: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)
    return True
