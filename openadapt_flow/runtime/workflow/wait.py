"""`openadapt_flow.wait(run_dir)`: block until a run is paused or terminal, so scripts never hang on a blocked or dead run."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from openadapt_flow.records.states import STOPPED_STATES, RecordType, RunState, is_a
from openadapt_flow.runtime.start.lifecycle import effective_state
from openadapt_flow.runtime.start.runref import RunRef, open_ref
from openadapt_flow.store.base import RunHandle


def workflow_result(run: RunHandle) -> Any:
    """What a completed workflow run returned (from its journal), or None."""
    rec = next((r for r in reversed(run.read_records()) if is_a(r, RecordType.WORKFLOW_RETURNED)), None)
    return rec["data"].get("result") if rec else None


@dataclass(frozen=True)
class WaitResult:
    state: str
    paused_reason: str | None
    exit_code: int
    transaction_outcome: str | None = None
    message: str | None = None
    result: Any = None  # what the workflow returned, once COMPLETED


def wait(run_dir: RunRef, timeout: float | None = None, poll_s: float = 0.1) -> WaitResult:
    """Block until the run (a directory, `memory:NAME` or a handle) is paused or terminal (a run whose process died
    counts as INTERRUPTED); TimeoutError after `timeout`."""
    run = open_ref(run_dir)
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        st = effective_state(run)
        state = st.get("state", RunState.PENDING)
        if state in STOPPED_STATES:
            return WaitResult(
                state,
                st.get("paused_reason"),
                RunState(state).exit_code,
                st.get("transaction_outcome"),
                st.get("message"),
                workflow_result(run) if state == RunState.COMPLETED else None,
            )
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"{run.ref}: still {state} after {timeout}s")
        time.sleep(poll_s)  # another process (or thread) writes the state; polling it is bounded by `timeout`
