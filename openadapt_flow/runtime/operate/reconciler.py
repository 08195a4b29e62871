"""`flow reconcile [ROOT]`: finalise runs whose owner died as INTERRUPTED; never touch a live one (any store)."""

from __future__ import annotations

from pathlib import Path

from openadapt_flow.bundle.loader import load_bundle
from openadapt_flow.errors import FlowError
from openadapt_flow.records.pausedoc import ReconcileRow
from openadapt_flow.records.states import LIVE_STATES, RunState
from openadapt_flow.runtime.judge.calls import call_steps
from openadapt_flow.runtime.start.lifecycle import finalize_interrupted, lease_ttl, queued
from openadapt_flow.runtime.start.runref import RunRef, open_ref
from openadapt_flow.store import FilesystemStore
from openadapt_flow.store.atomic import StorageFault
from openadapt_flow.store.base import RunStore
from openadapt_flow.store.keys import load_key
from openadapt_flow.store.lease import held_elsewhere, owner_alive


def as_store(root: Path | RunStore) -> RunStore:
    """A runs root directory is the filesystem store there."""
    return FilesystemStore(root) if isinstance(root, (Path, str)) else root


def reconcile_one(ref: RunRef) -> ReconcileRow:
    run = open_ref(ref)
    path = run.ref
    st = run.state() if run.has_state() else {"state": RunState.PENDING}
    if st.get("state") not in LIVE_STATES or queued(run):  # a submitted run no worker has started has no owner to lose
        return {"run_dir": path, "action": "none", "state": st.get("state")}
    unlock = run.try_lock()
    if unlock is not None and run.has_state() and run.state().get("state") not in LIVE_STATES:
        # Another reconciler finalised it between our read and our lock (two fleet workers' passes at once): once.
        unlock()
        return {"run_dir": path, "action": "none", "state": run.state().get("state")}
    info = run.lease_info()
    if unlock is None:
        if info is None or owner_alive(info, lease_ttl(run)):
            return {"run_dir": path, "action": "none", "state": st.get("state"), "reason": "owner alive"}
        why = f"owner {info.pid}@{info.host} is gone (pid dead or reused, or heartbeat stale)"
    elif info is not None and held_elsewhere(info, lease_ttl(run)):  # our lock cannot see another host's owner
        unlock()
        return {"run_dir": path, "action": "none", "state": st.get("state"), "reason": f"owner alive on {info.host}"}
    else:
        why = "owner process died"
    try:
        journal, records = run.open_journal(load_key(create=False))
        manifest = run.manifest()
        steps = (
            call_steps(records)
            if manifest.get("kind") == "workflow"
            else load_bundle(run.artifact_dir("bundle")).model.steps
        )
        result = finalize_interrupted(run, journal, records, steps, why)
        journal.close()
    finally:
        if unlock is not None:
            unlock()
    return {
        "run_dir": path,
        "action": "finalized",
        "state": result["state"],
        "transaction_outcome": result["transaction_outcome"],
        "reason": why,
    }


def reconcile_root(root: Path | RunStore) -> list[ReconcileRow]:
    """Every run of a runs root (or store): start-ups that were cut are reported, runs whose owner died finalised."""
    store = as_store(root)
    out: list[ReconcileRow] = []
    for run in store.unstarted():  # cut before the manifest (begin_run): never a run, and nothing was sent
        unlock = run.try_lock()
        if unlock is not None:  # its owner died before the run began; replay again (a live owner is still starting)
            unlock()
            out.append(
                {
                    "run_dir": run.ref,
                    "action": "unstarted",
                    "state": None,
                    "reason": "start-up was cut before manifest.json; no input was sent",
                }
            )
    for run in store.list_runs():
        try:
            out.append(reconcile_one(run))
        except (
            FlowError,
            StorageFault,
        ) as e:  # one broken run (or a full disk) must not stop the sweep; it is reported
            out.append({"run_dir": run.ref, "action": "error", "error": str(e)})
    return out
