"""Run-directory transitions outside the step loop: owner death, liveness, terminal checks."""

from __future__ import annotations

from collections.abc import Iterable

from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.bundle.models import Step
from openadapt_flow.errors import RefusedError
from openadapt_flow.records.entry import JournalEntry
from openadapt_flow.records.kinds import InterruptedData, RunStart, RunStopData
from openadapt_flow.records.rundoc import Finalized, ManifestBody, ManifestDoc, NotedState, StateView
from openadapt_flow.records.states import LIVE_STATES, TERMINAL_STATES, RecordType, RunState, is_a
from openadapt_flow.runtime.judge.outcome import classify
from openadapt_flow.store import digest_manifest
from openadapt_flow.store.base import JournalWriter, RunHandle
from openadapt_flow.store.faults import crash_point
from openadapt_flow.store.lease import held_elsewhere, owner_alive
from openadapt_flow.store.seal import SCHEMA_PREFIX


def lease_ttl(run: RunHandle) -> float:
    try:
        cfg = DeployConfig.model_validate(run.manifest().get("config") or {"schema": "openadapt-flow/config@1"})
        return cfg.runtime.lease_ttl_s
    except Exception:  # an unreadable config must not stop a liveness check
        return DeployConfig.default().runtime.lease_ttl_s


def queued(run: RunHandle) -> bool:
    """A run submitted to the fleet (spec §19) that no worker has started yet: its state document says PENDING (only
    `flow submit` writes one) and it has no journal. No process owns it, so none can have died under it."""
    return run.has_state() and not run.has_journal() and run.state().get("state") == RunState.PENDING


def check_queued(run: RunHandle) -> None:
    """The submitted run a worker is about to start is still queued (RefusedError, exit 6, if it was started)."""
    if not queued(run):
        raise RefusedError(f"{run.ref}: already started (a submitted run is started once); refusing")


def owner_gone(run: RunHandle) -> bool:
    """Has the process that owned this RUNNING run died? Lock free here and no fresh heartbeat from another host;
    or lock held but its recorded owner gone (pid dead or reused: another start time) or its heartbeat stale.
    A queued run has no owner yet: none is gone."""
    if queued(run):
        return False
    unlock = run.try_lock()
    info = run.lease_info()
    if unlock is not None:
        unlock()
        return info is None or not held_elsewhere(info, lease_ttl(run))  # another host's lock is not ours to see
    return info is not None and not owner_alive(info, lease_ttl(run))


def effective_state(run: RunHandle) -> StateView:
    """state.json as a reader should show it: a RUNNING run whose owner died shows as INTERRUPTED (nothing written)."""
    if not run.has_state():
        return {"state": RunState.PENDING}
    st = run.state()
    if st.get("state") in LIVE_STATES and owner_gone(run):
        noted: NotedState = {
            **st,
            "state": RunState.INTERRUPTED,
            "note": "owner process is gone; `flow reconcile` or `flow resume` finalises it",
        }
        return noted
    return st


def record_stop(journal: JournalWriter, data: RunStopData) -> JournalEntry:
    """Journal how the run stopped (the one writer of both records): `paused` for a PAUSED state, else `run_finished`
    (a run's end; an operator's decision ending or re-ending a run: a reject's BLOCKED, a reconciled outcome)."""
    if data["state"] == RunState.PAUSED:
        return journal.append(RecordType.PAUSED, None, data)
    return journal.append(RecordType.RUN_FINISHED, None, data)


def record_interrupted(journal: JournalWriter, data: InterruptedData) -> JournalEntry:
    """Journal `interrupted` (its one writer): a stop at a safe boundary, or an owner's death found later (finalized)."""
    return journal.append(RecordType.INTERRUPTED, None, data)


def finalize_interrupted(
    run: RunHandle, journal: JournalWriter, records: list[JournalEntry], steps: Iterable[Step], why: str
) -> Finalized:
    """Record an owner's death: INTERRUPTED with the transaction outcome classified from the journal.

    A journal that already ends with `run_finished` (the owner died, or the disk filled, after journaling its stop
    but before state.json) only has its view brought up to date: the journal is the record of truth.
    """
    last = _recorded_stop(records)
    if last is not None:
        d = last["data"]
        cp_seq = next(
            (r["seq"] for r in reversed(records) if is_a(r, RecordType.STEP_VERIFIED, RecordType.STEP_SKIPPED)), None
        )
        run.write_state(
            d["state"],
            journal=journal,
            transaction_outcome=d.get("transaction_outcome"),
            message=f"stop recorded in the journal (seq {last['seq']}); {why}",
            last_checkpoint_seq=cp_seq,
        )
        return {"state": d["state"], "transaction_outcome": d.get("transaction_outcome")}
    outcome, evidence = classify(steps, records)
    record_interrupted(
        journal, {"message": why, "finalized": True, "transaction_outcome": outcome, "outcome_evidence": evidence}
    )
    prev_seq = run.state().get("last_checkpoint_seq") if run.has_state() else None
    run.write_state(
        RunState.INTERRUPTED,
        journal=journal,
        transaction_outcome=outcome,
        message=why,
        last_checkpoint_seq=prev_seq,
    )
    return {"state": RunState.INTERRUPTED, "transaction_outcome": outcome}


def _recorded_stop(records: list[JournalEntry]) -> JournalEntry | None:
    """The journal's last record when it is a terminal `run_finished` (the owner died after journaling its stop)."""
    last = records[-1] if records else None
    if last is not None and is_a(last, RecordType.RUN_FINISHED) and last["data"].get("state") in TERMINAL_STATES:
        return last
    return None


def finalized_state(records: list[JournalEntry]) -> str:
    """The state `finalize_interrupted` leaves a run in (reads only): the journal's recorded stop, else INTERRUPTED."""
    last = _recorded_stop(records)
    return str(last["data"]["state"]) if last is not None else RunState.INTERRUPTED


def begin_run(
    run: RunHandle, key: bytes, manifest: ManifestBody, started: RunStart
) -> tuple[JournalWriter, JournalEntry]:
    """Start a run atomically: journal `run_started` (pinning the manifest about to be written), state RUNNING, and only
    then `manifest.json`, the file that makes a directory a run. A death before it leaves no run, and sent nothing.

    In a store with transactions the three are one (`run.starting()`): a submitted run's row holds the manifest
    `flow submit` wrote, so a connection lost between `run_started` and the manifest (a PostgreSQL restart) would
    leave the journal pinning bytes the row does not hold — an honest run refused as tampered, and no longer queued.
    Cut before the commit, nothing of the start stays: a new run is no run, a submitted one is still queued."""
    body: ManifestDoc = {"schema": SCHEMA_PREFIX + "manifest@1", **manifest}
    with run.starting():
        journal = run.new_journal(key)
        rec = journal.append(RecordType.RUN_STARTED, None, {**started, "manifest_digest": digest_manifest(body)})
        run.write_state(RunState.RUNNING, journal=journal)  # sealed; the ledger learns the run at its next state change
        crash_point("start:state_written")
        run.write_manifest(manifest)
    crash_point("start:manifest_written")  # committed: the run is whole
    return journal, rec


def check_manifest(run: RunHandle, records: list[JournalEntry]) -> None:
    """The manifest (params, backend, config and its policy) is pinned by the journal's first record."""
    first = next((r for r in records if is_a(r, RecordType.RUN_STARTED)), None)
    want = first["data"].get("manifest_digest") if first is not None else None
    if want is None:
        raise RefusedError(f"{run.ref}: journal has no run_started record pinning the manifest; refusing")
    if run.manifest_digest() != want:
        raise RefusedError(f"{run.describe('manifest')}: manifest changed since the run started (tampered); refusing")
