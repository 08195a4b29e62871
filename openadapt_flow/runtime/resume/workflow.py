"""A Python workflow run's part of the one resume (spec §14), once the executor (execute.py) made its plan's acts:
the decision applied (an answer or signal becomes its waiting call's recorded result), then its code run again from
the top on its journal: recorded calls return at once (runtime/act/durable)."""

from __future__ import annotations

from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.records.states import RunState
from openadapt_flow.runtime.act.assemble import stop_on_signals
from openadapt_flow.runtime.judge.calls import history
from openadapt_flow.runtime.resume.opened import Opened, resumed
from openadapt_flow.runtime.resume.plan import ResumePlan
from openadapt_flow.runtime.start.launch import RunOutcome
from openadapt_flow.runtime.workflow.ctx import WorkflowContext
from openadapt_flow.runtime.workflow.decision import apply_decision, journaled_deliveries
from openadapt_flow.runtime.workflow.run import Runner, Wiring, WorkflowIdentity, drive, is_async, open_context


def continue_workflow(o: Opened, plan: ResumePlan) -> RunOutcome:
    """Apply the plan's pending decision, then run the workflow's code (the plan's `entry`) again from the top on its
    journal."""
    fn = plan.entry
    assert fn is not None
    ident = WorkflowIdentity(o.manifest["run_id"], o.manifest["bundle"]["digest"], o.manifest["args"], o.config)
    rc = open_context(
        o.run, o.journal, o.lease, o.records, ident, Wiring(o.runs, o.req.progress, o.req.reporter, o.req.stop)
    )
    resumed(rc, plan)
    records = o.records + journaled_deliveries(rc, o.records)
    records = records + apply_decision(rc, records, plan.pending, plan.approval)
    o.run.write_state(RunState.RUNNING, journal=o.journal, last_checkpoint_seq=rc.fold.checkpoint_seq())
    recorded = BackendSpec.from_json(spec) if (spec := o.manifest.get("backend")) else None
    runner = Runner(o.req.backend or recorded, o.req.backend, o.req.backend_factory)
    wctx = WorkflowContext(rc, o.manifest["entry"], history(records), runner, is_async=is_async(fn))
    with stop_on_signals(rc.stop):
        return drive(wctx, fn, o.manifest["args"])
