"""The `flow` step kind: a child bundle run as its own durable run, linked both ways (spec §2, §6).

The child runs in this process on the parent's live backend, through the one child mechanism
(runtime/act/durable/child.py, as a Python workflow's ctx.replay): it lives in the parent's `children/<step>`.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.models import Step
from openadapt_flow.records.states import RunState
from openadapt_flow.records.stepdoc import VerifiedData
from openadapt_flow.runtime.act.durable.child import Borrowed, ChildCall, run_child
from openadapt_flow.runtime.start.context import RunContext
from openadapt_flow.runtime.start.launch import ReplayRequest, RunOutcome
from openadapt_flow.runtime.start.runref import run_name
from openadapt_flow.store.base import RunHandle


def run_child_step(ctx: RunContext, index: int, step: Step) -> VerifiedData:
    """Start the child (or continue the one already started); its step's verified data, or a pause or halt."""
    root = ctx.run.manifest()["bundle"]["path"]
    assert root is not None  # a `flow` step is a bundle's, and a bundle's run names its folder
    bundle = (Path(root) / (step.bundle or "")).resolve()
    child = run_child(
        ctx, ChildCall(step, index, str(bundle), partial(_start, ctx, step, bundle), partial(_resume, ctx))
    )
    return {
        "index": index,
        "verified_by": "runtime",
        "result": {"child_run": run_name(child), "state": RunState.COMPLETED},
        "screen_facts": [],
    }


def _start(ctx: RunContext, step: Step, bundle: Path, child: RunHandle) -> RunOutcome:
    assert ctx.runs is not None
    params = {k: ctx.interp(v) if isinstance(v, str) else v for k, v in (step.params or {}).items()}
    spec = ctx.run.manifest().get("backend")
    req = ReplayRequest(
        bundle=bundle,
        params=params,
        backend=BackendSpec.from_json(spec) if spec else None,
        config=ctx.config,
        run_dir=child.ref,
        durable=True,
        parent_run=ctx.run.ref,
        masks=dict(ctx.masks),
    )
    return ctx.runs.replay(
        req, progress=ctx.progress, reporter=ctx.reporter, backend_factory=lambda _spec: Borrowed(ctx.backend)
    )


def _resume(ctx: RunContext, child: RunHandle) -> RunOutcome:
    assert ctx.runs is not None
    return ctx.runs.resume(
        child, reporter=ctx.reporter, backend_factory=lambda _spec: Borrowed(ctx.backend), stop=ctx.stop
    )
