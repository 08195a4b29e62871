"""`flow reconcile [ROOT]`: finalise runs whose owner died as INTERRUPTED; never touch a live one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from openadapt_flow.bundle.loader import load_bundle
from openadapt_flow.errors import FlowError
from openadapt_flow.runtime.act.lifecycle import LIVE_STATES, finalize_interrupted, lease_ttl
from openadapt_flow.runtime.workflow.run import run_bundle
from openadapt_flow.store.atomic import StorageFault
from openadapt_flow.store.journal import JOURNAL_FILE, Journal
from openadapt_flow.store.keys import load_key
from openadapt_flow.store.lease import LeaseInfo, try_lock, unlock
from openadapt_flow.store.rundir import MANIFEST, RunDir


def run_dirs(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if (p / MANIFEST).is_file()) if root.is_dir() else []


def reconcile_one(path: Path) -> dict[str, Any]:
    run = RunDir(path)
    st = run.state() if run.state_path.exists() else {"state": "PENDING"}
    if st.get("state") not in LIVE_STATES:
        return {"run_dir": str(path), "action": "none", "state": st.get("state")}
    fd = try_lock(path)
    info = LeaseInfo.read(path)
    if fd is None:
        if info is None or info.owner_alive(lease_ttl(run)):
            return {"run_dir": str(path), "action": "none", "state": st.get("state"), "reason": "owner alive"}
        why = f"owner {info.pid}@{info.host} is gone (pid dead or reused, or heartbeat stale)"
    elif info is not None and info.held_elsewhere(lease_ttl(run)):  # our lock cannot see another host's owner
        unlock(fd)
        return {"run_dir": str(path), "action": "none", "state": st.get("state"), "reason": f"owner alive on {info.host}"}
    else:
        why = "owner process died"
    try:
        journal, records = Journal.open_existing(run.journal_path, load_key(create=False))
        manifest = run.manifest()
        bundle = run_bundle(manifest, records).model if manifest.get("kind") == "workflow" else load_bundle(run.bundle_dir).model
        result = finalize_interrupted(run, journal, records, bundle, why)
        journal.close()
    finally:
        if fd is not None:
            unlock(fd)
    return {"run_dir": str(path), "action": "finalized", **result, "reason": why}


def unstarted_dirs(root: Path) -> list[Path]:
    """Directories whose start-up was cut before `manifest.json` (begin_run): never a run, and nothing was sent."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and not (p / MANIFEST).exists() and (p / JOURNAL_FILE).is_file())


def reconcile_root(root: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for path in unstarted_dirs(root):
        fd = try_lock(path)
        if fd is not None:  # its owner died before the run began; replay again (a live owner is still starting)
            unlock(fd)
            out.append({"run_dir": str(path), "action": "unstarted", "state": None,
                        "reason": "start-up was cut before manifest.json; no input was sent"})
    for path in run_dirs(root):
        try:
            out.append(reconcile_one(path))
        except (FlowError, StorageFault) as e:  # one broken run (or a full disk) must not stop the sweep; it is reported
            out.append({"run_dir": str(path), "action": "error", "error": str(e)})
    return out
