"""The `flow` step kind: a child bundle run as its own durable run, linked both ways (spec §2, §6).

The child runs in this process on the parent's live backend. The parent is
PAUSED(awaiting_child) only while the child is paused; when the child ends the
parent's step completes (COMPLETED) or halts (anything else).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.models import Step
from openadapt_flow.runtime.act.context import RunContext
from openadapt_flow.runtime.decide.halt import Halt, Pause
from openadapt_flow.runtime.act.launch import ReplayRequest
from openadapt_flow.runtime.act.lifecycle import effective_state
from openadapt_flow.runtime.act.runref import run_name
from openadapt_flow.store.base import RunHandle
from openadapt_flow.store.states import LIVE_STATES


class _Borrowed:
    """The parent's backend lent to a child run: the child's close() must not close it."""

    def __init__(self, backend: Any) -> None:
        self._b = backend

    def __getattr__(self, name: str) -> Any:
        return getattr(self._b, name)

    def close(self) -> None:
        pass


def child_state(child: RunHandle) -> str | None:
    try:
        return child.state().get("state")
    except Exception:  # an unreadable child is reported by the halt below
        return None


def run_child_step(ctx: RunContext, index: int, step: Step) -> dict[str, Any]:
    """Start the child (or continue the one already started); its step's verified data, or a pause or halt.

    A child whose start-up was cut (journaled `child_started`, then no manifest: begin_run never finished, or the run
    was never made) is no run and sent nothing: it is started afresh, under the same name.
    """
    assert ctx.runs is not None
    child = ctx.run.sibling(step.id)
    name = run_name(child)
    if step.id in ctx.fold.children and child.has_manifest():
        try:
            state = effective_state(child).get("state")  # a child whose owner died (this process, killed) is INTERRUPTED
        except Exception:  # an unreadable child is reported by the halt below
            state = None
        if state in LIVE_STATES:  # another process is driving it (an operator resumed it directly)
            raise Pause("awaiting_child", step.id, f"child run {name} is {state} in another process; resume this run once it stops",
                        category="child")
        if state in ("PAUSED", "INTERRUPTED"):
            out = ctx.runs.resume(child, reporter=ctx.reporter, backend_factory=lambda spec: _Borrowed(ctx.backend), stop=ctx.stop)
        else:
            out = None
        ctx.run.add_child(child)  # (a no-op unless the parent died before linking it)
    else:
        out = _start_child(ctx, index, step, child)
    state = out.state if out is not None else child_state(child)
    if state == "COMPLETED":
        return {"index": index, "verified_by": "runtime", "result": {"child_run": name, "state": state}, "screen_facts": []}
    if state == "PAUSED":
        raise Pause("awaiting_child", step.id, f"child run {name} is paused; resume it, then this run", category="child")
    raise Halt("child", f"child run {name} ended {state}", step=step.id)


def _start_child(ctx: RunContext, index: int, step: Step, child: RunHandle) -> Any:
    assert ctx.runs is not None
    base = Path(ctx.run.manifest()["bundle"]["path"])
    bundle = (base / (step.bundle or "")).resolve()
    params = {k: ctx.interp(v) if isinstance(v, str) else v for k, v in (step.params or {}).items()}
    if step.id in ctx.fold.children:  # a start-up that was cut: nothing in it is a run (begin_run), clear it
        child.discard()
    else:
        ctx.journal.append("child_started", step.id, {"index": index, "child_run": run_name(child), "bundle": str(bundle)})
    spec = ctx.run.manifest().get("backend")
    req = ReplayRequest(bundle=bundle, params=params, backend=BackendSpec.from_json(spec) if spec else None, config=ctx.config,
                        run_dir=child.ref, durable=True, parent_run=ctx.run.ref, masks=dict(ctx.masks))
    out = ctx.runs.replay(req, progress=ctx.progress, reporter=ctx.reporter, backend_factory=lambda _spec: _Borrowed(ctx.backend))
    ctx.run.add_child(child)
    return out
