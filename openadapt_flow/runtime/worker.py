"""`flow worker [ROOT]`: resume runs whose wait is satisfied — a timer due, an answer or signal delivered,
an approval recorded (when the config allows auto-resume) — and durable runs that were INTERRUPTED (or whose owner
died) with nothing uncertain (SPEC §10, §19). Each run is resumed under its own lease, so several workers on one
root never run the same run twice; a run whose resume was refused or interrupted again waits `retry_s`."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openadapt_flow.backends.base import Backend
from openadapt_flow.backends.spec import BackendSpec, open_backend
from openadapt_flow.errors import FlowError
from openadapt_flow.runtime.decide.config import DeployConfig
from openadapt_flow.runtime.act.engine import Reporter, stop_on_signals
from openadapt_flow.runtime.act.lifecycle import LIVE_STATES, owner_gone
from openadapt_flow.runtime.resume import resume
from openadapt_flow.store.journal import JOURNAL_FILE, read_records
from openadapt_flow.store.atomic import StorageFault
from openadapt_flow.store.escalation import APPROVAL, PENDING
from openadapt_flow.store.rundir import CHILDREN, MANIFEST, STATE, RunDir


@dataclass
class _Seen:
    stamp: tuple[float, ...]  # mtimes: state, pending, approval, sibling children, nested children
    ready_at: float | None  # epoch when the run becomes resumable; None = not by a worker
    live: bool = False  # state says RUNNING/RESUMING/PENDING: whether its owner died is re-checked every scan


def _live(run: Path) -> bool:
    try:
        return json.loads((run / STATE).read_text()).get("state") in LIVE_STATES
    except (OSError, ValueError):
        return False


def _mtime(p: Path) -> float:
    try:
        return p.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def _ready_at(run: Path) -> float | None:
    """When (epoch) this run's wait is satisfied, read from its small state/pending files; None if never by a worker."""
    try:
        state = json.loads((run / STATE).read_text())
    except (OSError, ValueError):
        return None
    if state.get("state") == "INTERRUPTED":
        return 0.0 if _nothing_uncertain(run) else None
    if state.get("state") != "PAUSED":
        return None
    try:
        pending = json.loads((run / PENDING).read_text())
    except (OSError, ValueError):
        return None
    reason = pending.get("paused_reason")
    if reason == "awaiting_child":
        sibling = run.with_name(f"{run.name}.{pending.get('step')}")  # a bundle's `flow` step: a run of the root
        nested = run / CHILDREN / str(pending.get("step"))  # a workflow's ctx.replay / ctx.child: driven by its parent
        child = nested if (nested / MANIFEST).is_file() else sibling
        try:
            child_state = json.loads((child / STATE).read_text()).get("state")
        except (OSError, ValueError):
            return None
        if child_state in ("COMPLETED", "FAILED", "BLOCKED"):
            return 0.0
        # No worker sees a nested child: its parent is due when the child's own wait is satisfied.
        return _ready_at(child) if child == nested else None
    if reason == "awaiting_timer":
        return float(pending.get("due_epoch") or 0)
    if not (run / APPROVAL).exists():
        return None
    if reason == "awaiting_approval":
        try:
            cfg = DeployConfig.model_validate(json.loads((run / MANIFEST).read_text())["config"])
        except (OSError, ValueError, KeyError):
            return None
        return 0.0 if cfg.approvals.auto_resume else None
    return 0.0  # an answer or signal was delivered


def _nothing_uncertain(run: Path) -> bool:
    """A durable run of the root (not a `flow` child: its parent drives it) with no dispatched-but-unverified step.

    Read without verifying the chain: resume verifies everything before it acts, and refuses what does not hold.
    """
    try:
        manifest = json.loads((run / MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    if not manifest.get("durable") or manifest.get("parent_run"):
        return False
    open_steps: set[Any] = set()
    for r in read_records(run / JOURNAL_FILE):
        if r.get("type") == "action_dispatched":
            open_steps.add(r.get("step"))
        elif r.get("type") in ("step_verified", "step_skipped"):
            open_steps.discard(r.get("step"))
    return not open_steps


def _nested_stamp(run: Path) -> float:
    """The newest state, pending or approval file of a workflow's child runs (`children/*`, recursively)."""
    newest = 0.0
    for child in (run / CHILDREN).glob("*"):
        newest = max(newest, _mtime(child / STATE), _mtime(child / PENDING), _mtime(child / APPROVAL), _nested_stamp(child))
    return newest


class Worker:
    """Scans a runs root cheaply: a run's files are re-read only when their mtimes change."""

    def __init__(self, root: Path, reporter: Reporter | None = None, log: Callable[[str], None] = print,
                 backend_factory: Callable[[BackendSpec], Backend] = open_backend, retry_s: float = 30.0) -> None:
        self.root = root
        self.reporter = reporter
        self.log = log
        self.backend_factory = backend_factory
        self.stop = threading.Event()
        self._seen: dict[Path, _Seen] = {}
        self._retry_at: dict[Path, float] = {}
        self.retry_s = retry_s

    def due_runs(self) -> list[Path]:
        now = time.time()
        due = []
        for run in sorted(p for p in self.root.iterdir() if p.is_dir()) if self.root.is_dir() else []:
            siblings = max((_mtime(c / STATE) for c in run.parent.glob(run.name + ".*")), default=0.0)  # `flow` child runs
            stamp = (_mtime(run / STATE), _mtime(run / PENDING), _mtime(run / APPROVAL), siblings, _nested_stamp(run))
            seen = self._seen.get(run)
            if seen is None or seen.stamp != stamp:
                seen = self._seen[run] = _Seen(stamp, _ready_at(run) if stamp[0] else None, _live(run) if stamp[0] else False)
            ready = seen.ready_at
            if seen.live and (run / MANIFEST).is_file() and owner_gone(RunDir(run)):  # its owner died: resume finalises it
                ready = 0.0 if _nothing_uncertain(run) else None
            if ready is not None and ready <= now and self._retry_at.get(run, 0.0) <= now:
                due.append(run)
        return due

    def run_once(self) -> list[dict[str, Any]]:
        done = []
        for run in self.due_runs():
            if self.stop.is_set():
                break
            try:
                out = resume(run, reporter=self.reporter, stop=self.stop, backend_factory=self.backend_factory)
                row = {"run_dir": str(run), "state": out.state, "message": out.message}
            except (FlowError, StorageFault) as e:  # another worker owns it, it was refused, or the disk is full: report, go on
                row = {"run_dir": str(run), "state": "SKIPPED", "message": str(e)}
            self._seen.pop(run, None)
            if row["state"] in ("SKIPPED", "INTERRUPTED"):  # refused, unreachable, or stopped again: not every scan
                self._retry_at[run] = time.time() + self.retry_s
            self.log(f"{row['run_dir']}\t{row['state']}\t{row['message'] or ''}")
            done.append(row)
        return done

    def serve(self, poll_s: float = 0.5) -> None:
        with stop_on_signals(self.stop):
            while not self.stop.is_set():
                self.run_once()
                self.stop.wait(poll_s)
