"""The `flow` step kind: a child bundle run as its own durable run, linked both ways (SPEC §2, §6).

The child runs in this process on the parent's live backend. The parent is
PAUSED(awaiting_child) only while the child is paused; when the child ends the
parent's step completes (COMPLETED) or halts (anything else).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.models import Step
from openadapt_flow.runtime.act.context import RunContext
from openadapt_flow.runtime.decide.halt import Halt, Pause
from openadapt_flow.runtime.act.lifecycle import LIVE_STATES, effective_state
from openadapt_flow.store.rundir import MANIFEST, RunDir


class _Borrowed:
    """The parent's backend lent to a child run: the child's close() must not close it."""

    def __init__(self, backend: Any) -> None:
        self._b = backend

    def __getattr__(self, name: str) -> Any:
        return getattr(self._b, name)

    def close(self) -> None:
        pass


def child_dir(ctx: RunContext, step: Step) -> Path:
    return ctx.run.path.with_name(f"{ctx.run.path.name}.{step.id}")


def child_state(path: Path) -> str | None:
    try:
        return RunDir(path).state().get("state")
    except Exception:  # an unreadable child is reported by the halt below
        return None


def run_child_step(ctx: RunContext, index: int, step: Step) -> dict[str, Any]:
    """Start the child (or continue the one already started) and complete, pause or halt accordingly.

    A child whose start-up was cut (journaled `child_started`, then no `manifest.json`: begin_run never finished, or
    the directory was never made) is no run and sent nothing: it is started afresh, at the same path.
    """
    from openadapt_flow.runtime.resume import resume

    path = child_dir(ctx, step)
    if step.id in ctx.children and (path / MANIFEST).is_file():
        try:
            state = effective_state(RunDir(path)).get("state")  # a child whose owner died (this process, killed) is INTERRUPTED
        except Exception:  # an unreadable child is reported by the halt below
            state = None
        if state in LIVE_STATES:  # another process is driving it (an operator resumed it directly)
            raise Pause("awaiting_child", step.id, f"child run {path.name} is {state} in another process; resume this run once it stops",
                        category="child")
        if state in ("PAUSED", "INTERRUPTED"):
            out = resume(path, reporter=ctx.reporter, backend_factory=lambda spec: _Borrowed(ctx.backend), stop=ctx.stop)
        else:
            out = None
        ctx.run.add_child(path)  # (a no-op unless the parent died before linking it)
    else:
        out = _start_child(ctx, index, step, path)
    state = out.state if out is not None else child_state(path)
    if state == "COMPLETED":
        rec = ctx.journal.append("step_verified", step.id, {"index": index, "verified_by": "runtime", "result": {"child_run": path.name, "state": state}, "screen_facts": []})
        ctx.results[step.id] = {"child_run": path.name, "state": state}
        return rec
    if state == "PAUSED":
        raise Pause("awaiting_child", step.id, f"child run {path.name} is paused; resume it, then this run", category="child")
    raise Halt("child", f"child run {path.name} ended {state}", step=step.id)


def _start_child(ctx: RunContext, index: int, step: Step, path: Path) -> Any:
    from openadapt_flow.runtime.act.engine import ReplayRequest, replay  # the child uses the same engine

    base = Path(ctx.run.manifest()["bundle"]["path"])
    bundle = (base / (step.bundle or "")).resolve()
    params = {k: ctx.interp(v) if isinstance(v, str) else v for k, v in (step.params or {}).items()}
    if step.id in ctx.children:  # a start-up that was cut: nothing in the directory is a run (begin_run), clear it
        shutil.rmtree(path, ignore_errors=True)
    else:
        ctx.journal.append("child_started", step.id, {"index": index, "child_run": os.path.relpath(path, ctx.run.path.parent), "bundle": str(bundle)})
        ctx.children[step.id] = path
    spec = ctx.run.manifest().get("backend")
    req = ReplayRequest(bundle=bundle, params=params, backend=BackendSpec.from_json(spec) if spec else None, config=ctx.config,
                        run_dir=path, durable=True, parent_run=ctx.run.path, masks=dict(ctx.masks))
    out = replay(req, progress=ctx.progress, reporter=ctx.reporter, backend_factory=lambda _spec: _Borrowed(ctx.backend))
    ctx.run.add_child(path)
    return out
