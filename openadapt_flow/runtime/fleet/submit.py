"""`flow submit` (spec §19): the run is created in the store at once — PENDING, with its manifest and its bundle
snapshot — so `flow status`, `flow runs` and `flow wait` see it before any worker does; the row in flow_submissions
that says which desktops may run it enqueues its start job in the same transaction (migration 0003's trigger).

A fleet worker then starts that very run (runtime/act/engine.py `start_bundle` with `ReplayRequest.submitted`): it
takes the run's lease, checks the run is still queued, and writes the manifest it runs with (the backend of the
desktop it holds, its deployment config), pinned by `run_started` as for any run. Nothing travels outside the store:
the bundle is the run's own snapshot artifact.
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from openadapt_flow.version import __version__
from openadapt_flow.bundle.loader import load_bundle
from openadapt_flow.bundle.params import bind_params
from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.store import PG_PREFIX as PREFIX, ManifestBody, PostgresStore, check_queue_schema
from openadapt_flow.store.select import postgres_store
from openadapt_flow.store.states import RunState

PENDING_MESSAGE = "submitted to the fleet; waits for a worker with a free desktop"


def fleet_store(spec: str) -> PostgresStore:
    """The fleet's store, refused (exit 6, one line) unless `flow store migrate` gave it this code's run-store schema
    and the installed procrastinate's queue schema."""
    store = postgres_store(spec)  # checks the run store's schema version
    check_queue_schema(store.conn(), store.where)
    return store


def submit(spec: str, bundle: Path, params: Mapping[str, Any], label: str | None) -> str:
    """Create the run PENDING and enqueue its start, in one transaction; the run's reference (pg:NAME) comes back.
    Bad input (bundle, params) raises before anything is written."""
    loaded = load_bundle(bundle)
    bound = bind_params(loaded.model, params, from_flag=frozenset(params))
    store = fleet_store(spec)
    name = f"fleet-{uuid.uuid4().hex[:12]}"
    config = DeployConfig.default()
    manifest: ManifestBody = {
        "run_id": f"run-{uuid.uuid4().hex[:12]}",
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "tool_version": __version__,
        "host": socket.gethostname(),
        "bundle": {"path": str(loaded.root.resolve()), "name": loaded.model.name, "digest": loaded.digest, "files": list(loaded.files)},
        "params": bound.public(),
        "backend": None,  # the desktop a worker holds; its start writes the manifest it runs with
        "step_ids": [s.id for s in loaded.model.steps],
        "durable": True,
        "allow_model": False,
        "config": config.model_copy(update={"runtime": config.runtime.model_copy(update={"store": spec})}).model_dump(mode="json", by_alias=True),
        "parent_run": None,
        "child_runs": [],
    }
    with store.tx():
        run = store.create_run(PREFIX + name)
        run.snapshot_bundle(loaded.root, loaded.files)
        run.write_manifest(manifest)
        run.write_state(RunState.PENDING, message=PENDING_MESSAGE)
        store.run("INSERT INTO flow_submissions (run, label) VALUES (%s, %s)", (run.id(), label))
    return run.ref
