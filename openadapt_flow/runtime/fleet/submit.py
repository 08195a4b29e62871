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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.bundle.items import Item
from openadapt_flow.bundle.loader import LoadedBundle, load_bundle
from openadapt_flow.bundle.params import BoundParams, bind_params
from openadapt_flow.records.rundoc import ManifestBody
from openadapt_flow.records.states import RunState
from openadapt_flow.store import PG_PREFIX as PREFIX
from openadapt_flow.store import PostgresStore, check_queue_schema
from openadapt_flow.store.select import postgres_store
from openadapt_flow.version import __version__

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
    with store.tx():
        return _create(spec, store, loaded, bound, label, None)


@dataclass(frozen=True)
class Submitted:
    """One item of `flow submit --items`: its line and key, its run, and whether this submit queued it (False: the
    key was queued before, and `state` is its run's state now)."""

    item: int
    key: str
    run: str
    queued: bool
    state: str


def submit_items(spec: str, bundle: Path, items: Sequence[Item], label: str | None) -> list[Submitted]:
    """Queue one durable run per item, in order, each key once per bundle: a key already queued, running or done is not
    queued again. Every item is typed before the first is queued (bad input queues nothing)."""
    loaded = load_bundle(bundle)
    bound = [bind_params(loaded.model, item.params) for item in items]
    store = fleet_store(spec)
    scope = loaded.model.name
    out: list[Submitted] = []
    for item, params in zip(items, bound):
        with store.tx():
            store.run("SELECT pg_advisory_xact_lock(hashtext(%s))", ("flow-items:" + scope,))
            before = store.one(
                "SELECT r.name, r.state FROM flow_submissions s JOIN flow_runs r ON r.id = s.run "
                "WHERE s.item_scope = %s AND s.item_key = %s",
                (scope, item.key),
            )
            if before is not None:
                out.append(Submitted(item.line, item.key, PREFIX + before[0], False, before[1]))
                continue
            ref = _create(spec, store, loaded, params, label, (scope, item.key))
        out.append(Submitted(item.line, item.key, ref, True, RunState.PENDING.value))
    return out


def _create(
    spec: str,
    store: PostgresStore,
    loaded: LoadedBundle,
    bound: BoundParams,
    label: str | None,
    item: tuple[str, str] | None,
) -> str:
    """In the caller's transaction: the run PENDING with its manifest and bundle, and the submission that queues it."""
    name = f"fleet-{uuid.uuid4().hex[:12]}"
    config = DeployConfig.default()
    manifest: ManifestBody = {
        "run_id": f"run-{uuid.uuid4().hex[:12]}",
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "tool_version": __version__,
        "host": socket.gethostname(),
        "bundle": {
            "path": str(loaded.root.resolve()),
            "name": loaded.model.name,
            "digest": loaded.digest,
            "files": list(loaded.files),
        },
        "params": bound.public(),
        "backend": None,  # the desktop a worker holds; its start writes the manifest it runs with
        "step_ids": [s.id for s in loaded.model.steps],
        "durable": True,
        "allow_model": False,
        "config": config.model_copy(update={"runtime": config.runtime.model_copy(update={"store": spec})}).model_dump(
            mode="json", by_alias=True
        ),
        "parent_run": None,
        "child_runs": [],
    }
    run = store.create_run(PREFIX + name)
    run.snapshot_bundle(loaded.root, loaded.files)
    run.write_manifest(manifest)
    run.write_state(RunState.PENDING, message=PENDING_MESSAGE)
    scope, key = item if item is not None else (None, None)
    store.run(
        "INSERT INTO flow_submissions (run, label, item_scope, item_key) VALUES (%s, %s, %s, %s)",
        (run.id(), label, scope, key),
    )
    return run.ref
