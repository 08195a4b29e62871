"""The runtime's face: what the entry points (cli/, console/, phone/) start, resume, decide and list runs with.

The runtime's rooms, each named by what it holds (docs/architecture.md): judge/ (pure verdicts, outcomes and progress
from the journal), start/ (what composes a run: its request, context, backend, store reference, preflight, lifecycle
transitions), act/ (the step loop that drives a backend), operate/ (operator approvals, operators, reconcile, teach),
workflow/ (Python workflows), resume/ (one resume path), fleet/ (submitted runs on a job queue), batch/ (one run per
work item, each exactly once), runs.py (the composition root) and worker.py. Code outside runtime/ that only uses it imports these names from here, never a room's
module (the `runtime-face` import contract).

The names load on first use (PEP 562): importing this package costs nothing, so `flow --help` stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from openadapt_flow.runtime.act.assemble import stop_on_signals
    from openadapt_flow.runtime.act.reset import ResetResult
    from openadapt_flow.runtime.act.start_state import StartResult, check_start_state
    from openadapt_flow.runtime.batch.results import BatchResult, counts, csv_beside, summary_line, write_results
    from openadapt_flow.runtime.batch.runner import BatchEvents, BatchRequest, Reset, run_batch
    from openadapt_flow.runtime.batch.status import ItemResult, ItemStatus
    from openadapt_flow.runtime.batch.status import exit_code as batch_exit_code
    from openadapt_flow.runtime.fleet.desks import Desks
    from openadapt_flow.runtime.fleet.dirty import Dirty, dirty_desks, mark_desk_clean
    from openadapt_flow.runtime.fleet.jobs import Fleet
    from openadapt_flow.runtime.fleet.ride import opened as store_opened
    from openadapt_flow.runtime.fleet.submit import Submitted, fleet_store, submit, submit_items
    from openadapt_flow.runtime.fleet.targets import TargetsFile, load_targets
    from openadapt_flow.runtime.operate.approval import DECISION_NAMES, Audit, DecisionOptions, approve, deliver
    from openadapt_flow.runtime.operate.operators import (
        add_operator,
        authenticate,
        check_active,
        disable_operator,
        list_operators,
        reset_operator,
    )
    from openadapt_flow.runtime.operate.reconciler import reconcile_root
    from openadapt_flow.runtime.operate.teach import apply_patches
    from openadapt_flow.runtime.operate.votes import decided_by, os_user, phone_vote_conflict
    from openadapt_flow.runtime.runs import replay, reset_app, resume_plan, start_workflow
    from openadapt_flow.runtime.runs import resume as resume_run
    from openadapt_flow.runtime.start.backend_select import BackendFlags, select_backend
    from openadapt_flow.runtime.start.context import Progress, StepSummary
    from openadapt_flow.runtime.start.launch import ReplayRequest, WorkflowRequest
    from openadapt_flow.runtime.start.lifecycle import effective_state
    from openadapt_flow.runtime.start.runref import open_ref
    from openadapt_flow.runtime.worker import Worker
    from openadapt_flow.runtime.workflow.api import parse_arg_pairs
    from openadapt_flow.runtime.workflow.wait import wait

__all__ = [
    "DECISION_NAMES",
    "Audit",
    "BackendFlags",
    "DecisionOptions",
    "Desks",
    "Fleet",
    "Progress",
    "ReplayRequest",
    "StepSummary",
    "TargetsFile",
    "Worker",
    "WorkflowRequest",
    "add_operator",
    "apply_patches",
    "approve",
    "authenticate",
    "check_active",
    "decided_by",
    "deliver",
    "disable_operator",
    "effective_state",
    "fleet_store",
    "list_operators",
    "load_targets",
    "open_ref",
    "os_user",
    "parse_arg_pairs",
    "phone_vote_conflict",
    "reconcile_root",
    "replay",
    "reset_operator",
    "resume_plan",
    "resume_run",
    "select_backend",
    "start_workflow",
    "stop_on_signals",
    "submit",
    "wait",
]
# a batch of work items (runtime/batch/), and the same items queued for the fleet
__all__ += [
    "Submitted",
    "submit_items",
    "BatchEvents",
    "BatchRequest",
    "BatchResult",
    "ItemResult",
    "ItemStatus",
    "Reset",
    "batch_exit_code",
    "counts",
    "csv_beside",
    "run_batch",
    "summary_line",
    "write_results",
]
# clean and dirty desktops of the fleet (runtime/fleet/dirty.py)
__all__ += ["Dirty", "dirty_desks", "mark_desk_clean"]
# a fleet worker's store, waited for while it restarts (runtime/fleet/ride.py)
__all__ += ["store_opened"]
# the start state and the reset (runtime/act/start_state.py, runtime/act/reset.py)
__all__ += ["ResetResult", "StartResult", "check_start_state", "reset_app"]

# name here -> its module under runtime/ (and its name there, where the face renames it: `resume` is a package)
_WHERE = {
    "stop_on_signals": "act.assemble",
    "BatchResult": "batch.results",
    "counts": "batch.results",
    "csv_beside": "batch.results",
    "summary_line": "batch.results",
    "write_results": "batch.results",
    "BatchEvents": "batch.runner",
    "BatchRequest": "batch.runner",
    "Reset": "batch.runner",
    "run_batch": "batch.runner",
    "ItemResult": "batch.status",
    "ItemStatus": "batch.status",
    "batch_exit_code": "batch.status",
    "ResetResult": "act.reset",
    "StartResult": "act.start_state",
    "check_start_state": "act.start_state",
    "Desks": "fleet.desks",
    "Dirty": "fleet.dirty",
    "dirty_desks": "fleet.dirty",
    "mark_desk_clean": "fleet.dirty",
    "Fleet": "fleet.jobs",
    "store_opened": "fleet.ride",
    "fleet_store": "fleet.submit",
    "submit": "fleet.submit",
    "Submitted": "fleet.submit",
    "submit_items": "fleet.submit",
    "TargetsFile": "fleet.targets",
    "load_targets": "fleet.targets",
    "Audit": "operate.approval",
    "DECISION_NAMES": "operate.approval",
    "DecisionOptions": "operate.approval",
    "approve": "operate.approval",
    "deliver": "operate.approval",
    "phone_vote_conflict": "operate.votes",
    "os_user": "operate.votes",
    "decided_by": "operate.votes",
    "add_operator": "operate.operators",
    "authenticate": "operate.operators",
    "check_active": "operate.operators",
    "disable_operator": "operate.operators",
    "list_operators": "operate.operators",
    "reset_operator": "operate.operators",
    "reconcile_root": "operate.reconciler",
    "apply_patches": "operate.teach",
    "replay": "runs",
    "reset_app": "runs",
    "resume_run": "runs",
    "resume_plan": "runs",
    "start_workflow": "runs",
    "BackendFlags": "start.backend_select",
    "select_backend": "start.backend_select",
    "Progress": "start.context",
    "StepSummary": "start.context",
    "ReplayRequest": "start.launch",
    "WorkflowRequest": "start.launch",
    "effective_state": "start.lifecycle",
    "open_ref": "start.runref",
    "Worker": "worker",
    "parse_arg_pairs": "workflow.api",
    "wait": "workflow.wait",
}
_RENAMED = {"resume_run": "resume", "batch_exit_code": "exit_code", "store_opened": "opened"}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), _RENAMED.get(name, name))


def __dir__() -> list[str]:
    return sorted(__all__)
