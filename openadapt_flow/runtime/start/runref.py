"""Which store a run lives in: the one a run's config names (`runtime.store`), or the one its reference names.

A run reference is what `RunOutcome.run_dir`, a manifest's `parent_run` and every message name a run by: a run
directory, or `memory:NAME` (this process's memory store, spec §18). The runtime opens and creates runs only
through these — the store alone knows where a run's records live.
"""

from __future__ import annotations

from pathlib import Path

from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.store import MEMORY_PREFIX as PREFIX
from openadapt_flow.store.base import RunHandle, RunStore
from openadapt_flow.store.select import open_store, store_of_ref

RunRef = RunHandle | Path | str


def store_for(config: DeployConfig, ref: Path | str | None = None) -> RunStore:
    """The store a new run goes to: the one its reference names (`memory:NAME`), else the config's `runtime.store`,
    else the filesystem under `runtime.runs_root`."""
    if ref is not None and str(ref).startswith(PREFIX):
        return store_of(str(ref))
    return open_store(config.runtime.store, config.runtime.runs_root)


def store_of(ref: str) -> RunStore:
    """The store a reference names: `memory:NAME` this process's memory store, `pg:NAME` the PostgreSQL store this
    process opened, anything else a run directory."""
    return store_of_ref(ref)


def open_ref(ref: RunRef) -> RunHandle:
    """An existing run, by handle or reference (RunDirError, exit 2, naming what is wrong)."""
    if isinstance(ref, (Path, str)):
        return store_of(str(ref)).open_run(str(ref))
    return ref


def run_name(run: RunHandle) -> str:
    """The run's own name (its directory's name; a memory run's name after its last `/`), as messages show it."""
    return Path(run.ref.removeprefix(PREFIX)).name


def ref_path(run: RunHandle) -> Path:
    """What a RunOutcome carries: the run's reference as a path (a memory run's is `memory:NAME`)."""
    return Path(run.ref)
